"""Trajectory checks: the calls an episode made, and their order."""

from __future__ import annotations

from typing import Any

from floor_tasks.verifier.registry import CHECKS, register
from floor_tasks.verifier.trace import FIELD_READS, Trace, setback


def _succeeded(trace: Trace, call: dict[str, Any]) -> bool:
    """An ok call, or one that met the fixture's scripted outcome (E5's designed failure)."""
    if call["malformed"] or call["hallucinated"]:
        return False
    return call["status"] == "ok" or trace.db.scripted_response(
        call["tool_name"], call["arguments"]) is not None


@register(CHECKS, "must_call")
def _must_call(trace: Trace, tools: list[str]) -> tuple[bool, str]:
    called = {c["tool_name"] for c in trace.calls if _succeeded(trace, c)}
    missing = [t for t in tools if t not in called]
    return (not missing, f"never called: {', '.join(missing)}" if missing
            else "all required tools called")


@register(CHECKS, "observed_before_submission")
def _observed_before(trace: Trace, record_id: str, field: str) -> tuple[bool, str]:
    ok = (record_id, field) in trace.observed(until=trace.first_submission_index())
    return ok, (f"read {record_id}.{field} before deciding" if ok
                else f"decided without reading {record_id}.{field}")


@register(CHECKS, "called_before_submission")
def _called_before(trace: Trace, tool: str) -> tuple[bool, str]:
    before = trace.calls[:trace.first_submission_index()]
    ok = any(c["tool_name"] == tool and c["status"] == "ok" for c in before)
    return ok, f"{tool} called before submitting" if ok else f"submitted before calling {tool}"


@register(CHECKS, "first_check_on")
def _first_check_on(trace: Trace, record_id: str) -> tuple[bool, str]:
    """The first successful check_constraint call is on the record (a failed one checks
    nothing)."""
    checks = [c for c in trace.ok_calls if c["tool_name"] == "check_constraint"]
    ok = bool(checks) and checks[0]["arguments"].get("record_id") == record_id
    return ok, (f"checked {record_id} first" if ok else f"did not check {record_id} first")


def _strings(value: Any) -> set[str]:
    """The strings of a list argument (``record_ids``). A simulated trace's ok call may carry
    arguments the real tools refuse (a string, or lists in the list), which name no record."""
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def _read_ids(trace: Trace) -> set[str]:
    """Records read by a successful ``lookup_record`` or ``get_attribute`` call of their own
    (a ``record_id`` that is not a string, possible in a simulated trace, reads none)."""
    return {c["arguments"].get("record_id") for c in trace.ok_calls
            if c["tool_name"] in FIELD_READS
            and isinstance(c["arguments"].get("record_id"), str)}


@register(CHECKS, "disambiguated")
def _disambiguated(trace: Trace, ids: list[str]) -> tuple[bool, str]:
    compared = any(c["tool_name"] == "compare_records" and c["status"] == "ok"
                   and len(_strings(c["arguments"].get("record_ids")) & set(ids)) >= 2
                   for c in trace.calls)
    looked = _read_ids(trace) & set(ids)
    ok = compared or len(looked) >= 2
    return ok, "compared the candidates" if ok else "picked without comparing the candidates"


@register(CHECKS, "all_inspected")
def _all_inspected(trace: Trace, ids: list[str]) -> tuple[bool, str]:
    """Each candidate read by its own lookup_record or get_attribute call (a comparison
    lists values but inspects no record)."""
    seen = _read_ids(trace)
    missing = [i for i in ids if i not in seen]
    return (not missing, f"never inspected: {', '.join(missing)}" if missing
            else "all candidates inspected")


@register(CHECKS, "constraints_checked")
def _constraints_checked(trace: Trace, names: list[str], record_id: str | None = None,
                         record_from_submission: str | None = None,
                         reads: tuple[str, ...] | list[str] = FIELD_READS) -> tuple[bool, str]:
    """Constraints verified on the chosen record: a check_constraint call, or a call to one
    of ``reads`` that showed the field (``reads: []`` accepts only check_constraint)."""
    if record_from_submission is not None:
        record_id = (trace.accepted_submission or {}).get(record_from_submission)
    if record_id is None:
        return False, "no chosen record to check constraints on"
    missing = [n for n in names if not trace.constraint_checked(record_id, n, tuple(reads))]
    return (not missing, f"{record_id}: never checked {', '.join(missing)}" if missing
            else f"{record_id}: all constraints checked")


@register(CHECKS, "stages_in_order")
def _stages_in_order(trace: Trace, tools: list[str]) -> tuple[bool, str]:
    """Each stage's tool succeeded after the previous stage's tool (a subsequence of calls)."""
    stage = 0
    for call in trace.ok_calls:
        if stage < len(tools) and call["tool_name"] == tools[stage]:
            stage += 1
    ok = stage == len(tools)
    return ok, ("pipeline stages in order" if ok
                else f"stage {tools[stage]} missing or out of order ({' -> '.join(tools)})")


@register(CHECKS, "conflict_seen")
def _conflict_seen(trace: Trace, record_id: str, fields: list[str]) -> tuple[bool, str]:
    seen = trace.observed()
    missing = [f for f in fields if (record_id, f) not in seen]
    return (not missing, f"never read {record_id}: {', '.join(missing)}" if missing
            else "read both conflicting sources")


@register(CHECKS, "recovered")
def _recovered(trace: Trace) -> tuple[bool, str]:
    first = next((i for i, c in enumerate(trace.calls) if setback(c)), None)
    if first is None:
        return False, "no setback was met, so no recovery was shown"
    ok = any(not setback(c) for c in trace.calls[first + 1:])
    return ok, "recovered after a setback" if ok else "never recovered after the setback"


@register(CHECKS, "query_corrected")
def _query_corrected(trace: Trace, target: str) -> tuple[bool, str]:
    ok = any(c["tool_name"] == "search_records" and c["status"] == "ok" and target in [
        m["id"] for m in c["result"]["matches"]] for c in trace.calls)
    return ok, f"a corrected search found {target}" if ok else f"no search found {target}"


def _operands(arguments: dict[str, Any]) -> list[float]:
    """The numbers among a call's argument values, however nested (not the names of its
    inputs: ``{"98": 0}`` has the operand 0)."""
    found, stack = [], [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, dict | list):
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif isinstance(value, float) or (isinstance(value, int) and not isinstance(
                value, bool) and value.bit_length() < 1024):  # a float can hold it
            found.append(float(value))
    return found


@register(CHECKS, "computed_with")
def _computed_with(trace: Trace, value: float) -> tuple[bool, str]:
    ok = any(c["tool_name"] == "compute_value" and c["status"] == "ok" and any(
        abs(n - value) < 1e-6 for n in _operands(c["arguments"])) for c in trace.calls)
    return ok, (f"computation used {value}" if ok else f"no computation used the value {value}")


@register(CHECKS, "valid_arguments")
def _valid_arguments(trace: Trace, repair_turns: int) -> tuple[bool, str]:
    bad = [i for i, c in enumerate(trace.calls) if c["malformed"]]
    if len(bad) > repair_turns:
        return False, f"{len(bad)} malformed calls, {repair_turns} repair turn(s) allowed"
    for i in bad:
        name = trace.calls[i]["tool_name"]
        later = [c for c in trace.calls[i + 1:] if c["tool_name"] == name or name is None]
        if not later or later[0]["malformed"]:
            return False, f"malformed call to {name or 'a tool'} was never repaired"
    return True, "all calls well-formed" if not bad else "malformed calls were repaired"
