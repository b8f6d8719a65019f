"""The trace: what one episode did, as the env recorded it, for the checks to read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from floor_tasks.database import FixtureDB
from floor_tasks.task import Variant

FIELD_READS = ("lookup_record", "get_attribute")
"""The calls whose results show a record's field, as the reference's constraint predicates
read them (a list_options or compare_records row does not count)."""


@dataclass
class Trace:
    """What happened in one episode, as the env recorded it."""

    variant: Variant
    db: FixtureDB
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Call log: turn, tool_name, arguments, status, result, error, hallucinated, malformed."""
    final_answer: str | None = None
    termination: str | None = None

    def log_call(self, turn: int, tool_name: str | None, arguments: dict[str, Any],
                 call_id: str | None, status: str, result: Any, error: dict[str, Any] | None,
                 *, malformed: bool = False) -> dict[str, Any]:
        """Append one call to :attr:`calls` and return it. ``hallucinated`` and ``malformed``
        follow from the error's type (``malformed`` also when the call could not be read)."""
        kind = (error or {}).get("type")
        entry = {"turn": turn, "tool_name": tool_name, "arguments": arguments,
                 "call_id": call_id, "status": status, "result": result, "error": error,
                 "hallucinated": kind == "tool_not_available",
                 "malformed": malformed or kind == "schema_validation_error"}
        self.calls.append(entry)
        return entry

    @property
    def ok_calls(self) -> list[dict[str, Any]]:
        """Calls whose envelope status is ok."""
        return [c for c in self.calls if c["status"] == "ok"]

    @property
    def submissions(self) -> list[dict[str, Any]]:
        """Every ``submit_decision`` call that was dispatched."""
        return [c for c in self.calls if c["tool_name"] == "submit_decision"
                and not c["malformed"] and not c["hallucinated"]]

    @property
    def accepted_submission(self) -> dict[str, Any] | None:
        """The last submission, if it was accepted."""
        subs = self.submissions
        return subs[-1]["arguments"] if subs and subs[-1]["status"] == "ok" else None

    def first_submission_index(self) -> int:
        """Index in the call log of the first submission (the log's length if none)."""
        return next((i for i, c in enumerate(self.calls) if c["tool_name"] == "submit_decision"),
                    len(self.calls))

    def observed(self, until: int | None = None,
                 tools: tuple[str, ...] | None = None) -> set[tuple[str, str]]:
        """(record id, field) pairs that ok results revealed, in calls before ``until``, from
        the given ``tools`` only (every tool when ``None``)."""
        seen: set[tuple[str, str]] = set()
        for call in self.calls[:until]:
            result, name = call["result"], call["tool_name"]
            if call["status"] != "ok" or not isinstance(result, dict) or (
                    tools is not None and name not in tools):
                continue
            if name == "lookup_record":
                seen.update((result["record_id"], f) for f in result["fields"])
            elif name == "get_attribute":
                seen.add((result["record_id"], result["attribute"]))
            elif name == "compare_records":
                seen.update((row["id"], result["criterion"]) for row in result["comparison"])
            elif name == "check_constraint":
                spec = self.db.constraints.get(result["constraint_name"], {})
                seen.add((result["record_id"], spec.get("field", result["constraint_name"])))
            elif name == "list_options":
                seen.update((o["id"], k) for o in result["options"] for k in o if k != "id")
        return seen

    def constraint_checked(self, record_id: str, name: str,
                           reads: tuple[str, ...] = FIELD_READS) -> bool:
        """True if ``name`` was checked on the record, or a call to one of ``reads`` showed the
        constraint's field for the record."""
        spec = self.db.constraints.get(name, {})
        checked = any(c["tool_name"] == "check_constraint" and c["status"] == "ok"
                      and c["arguments"].get("record_id") == record_id
                      and c["arguments"].get("constraint_name") == name for c in self.calls)
        return checked or (bool(reads) and (record_id, spec.get("field", name)) in self.observed(
            tools=reads))


def setback(call: dict[str, Any]) -> bool:
    result = call["result"]
    empty = isinstance(result, dict) and result.get("matches") == []
    return call["status"] != "ok" or empty
