"""The eight AgentFloor tools over a fixture database, and the result envelope.

Every call returns an envelope ``{tool_name, call_id, status, result, error}`` whose status is
``ok``, ``not_found`` or ``error``. :meth:`FloorToolkit.dispatch` never raises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal

from agentworld_envs.errors import FieldedError
from agentworld_envs.protocol.tool_calls import ToolCall
from agentworld_envs.protocol.tools import ToolArgumentError, Toolkit, UnknownToolError, tool
from floor_tasks.database import FixtureDB

__all__ = ["FloorToolkit", "ToolFailure", "TOOL_NAMES", "copy_data"]

MAX_ARGUMENT_CHARS = 8192
"""Calls whose JSON arguments are longer than this are refused, keeping envelopes small."""

TOOL_NAMES = (
    "search_records", "lookup_record", "get_attribute", "list_options",
    "check_constraint", "compare_records", "compute_value", "submit_decision",
)


class ToolFailure(FieldedError):
    """A tool's non-ok outcome: a status, an error type, a message and an optional hint."""

    def __init__(self, status: str, error_type: str, message: str, hint: str | None = None,
                 result: Any = None) -> None:
        super().__init__(message)
        self.status, self.error_type, self.message = status, error_type, message
        self.hint, self.result = hint, result


_SCALARS = frozenset({str, int, float, bool, type(None)})
MAX_RESULT = 1e15
"""``compute_value`` results are smaller in size: each whole one is exact as a float and short
in JSON (1e308 came back as a 309-digit integer that no agent could send back)."""


def copy_data(value: Any) -> Any:
    """Copy of fixture data and the envelopes built on it (nested dicts, lists and immutable
    scalars), about 4x cheaper than ``deepcopy``."""
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else copy_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else copy_data(v) for v in value]
    return value


def _malformed(message: str) -> ToolFailure:
    """An argument-shape error: a malformed call, as a JSON-Schema failure is in the reference."""
    return ToolFailure("error", "schema_validation_error", message)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _malformed(f"input {name!r} must be a number")
    try:
        return float(value)
    except OverflowError:
        raise ToolFailure("error", "out_of_range", f"input {name!r} is too large") from None


def _best(rows: list[dict[str, Any]], direction: str) -> str | None:
    """The best row's id, ordering values as Python does (as the reference's sort does).

    Rows without the field are skipped; ties go to the first row given. Values that do not
    order against each other (a number and a string) give no best row.
    """
    present = [r for r in rows if r["criterion_value"] is not None]
    try:
        best = (max if direction == "desc" else min)(present, key=lambda r: r["criterion_value"])
    except (TypeError, ValueError):
        return None
    return best["id"]


class FloorToolkit(Toolkit):
    """AgentFloor's tools over one fixture database.

    Args:
        db: The fixture database of the task.
        judge_submission: Called with a submission's fields; True accepts it.
    """

    def __init__(self, db: FixtureDB, judge_submission: Callable[[dict[str, Any]], bool]) -> None:
        self.db = db
        self.judge_submission = judge_submission
        self.accepted_submissions = 0

    def _record(self, record_id: str) -> dict[str, Any]:
        if record_id not in self.db.records:
            raise ToolFailure("not_found", "record_not_found", f"no record with id {record_id!r}",
                              hint="Use search_records or list_options to find valid IDs.")
        return self.db.records[record_id]

    @tool
    def search_records(self, query: str) -> dict[str, Any]:
        """Search the record index by name and return the matching record IDs and names.

        The index is keyed by names and name fragments; the query must equal a key exactly
        (case and spacing included), so a misspelt query finds nothing.

        Args:
            query: The name or name fragment to look up, e.g. "Alpha Sensor".
        """
        ids = self.db.search(query)
        return {"query": query, "matches": [
            {"id": i, "name": self.db.records.get(i, {}).get("name")} for i in ids]}

    @tool
    def lookup_record(self, record_id: str, fields: list[str] | None = None) -> dict[str, Any]:
        """Return a record's fields.

        Args:
            record_id: The record's ID, e.g. "P104".
            fields: Only these fields; all fields when omitted or empty.
        """
        record = self._record(record_id)
        if not fields:
            return {"record_id": record_id, "fields": copy_data(record)}
        result: dict[str, Any] = {"record_id": record_id, "fields": {
            f: copy_data(record[f]) for f in fields if f in record}}
        missing = [f for f in fields if f not in record]
        if missing:
            result["missing_fields"] = missing
        return result

    @tool
    def get_attribute(self, record_id: str, attribute: str) -> dict[str, Any]:
        """Return one attribute of a record.

        Args:
            record_id: The record's ID.
            attribute: The field name, e.g. "reliability_score".
        """
        record = self._record(record_id)
        if attribute not in record:
            raise ToolFailure("not_found", "attribute_not_found",
                              f"record {record_id!r} has no attribute {attribute!r}",
                              hint=f"Available attributes: {', '.join(record)}.")
        return {"record_id": record_id, "attribute": attribute,
                "value": copy_data(record[attribute])}

    @tool
    def list_options(self, option_set: str | None = None) -> dict[str, Any]:
        """List the options of an option set (the first set when omitted or empty).

        Args:
            option_set: The option set's name, e.g. "storage_plans".
        """
        if not self.db.options:
            return {"option_set": option_set, "options": [], "available_sets": []}
        names = list(self.db.options)
        name = option_set or names[0]
        if name not in self.db.options:
            raise ToolFailure("not_found", "option_set_not_found", f"no option set {name!r}",
                              hint=f"Available option sets: {', '.join(names)}.")
        return {"option_set": name, "options": copy_data(self.db.options[name]),
                "available_sets": names}

    @tool
    def check_constraint(self, record_id: str, constraint_name: str) -> dict[str, Any]:
        """Check whether a record satisfies a named constraint of the task.

        Args:
            record_id: The record to check.
            constraint_name: The constraint's name, e.g. "budget_max".
        """
        self._record(record_id)
        if constraint_name not in self.db.constraints:
            raise ToolFailure("not_found", "constraint_not_found",
                              f"no constraint named {constraint_name!r}",
                              hint=f"Available constraints: {', '.join(self.db.constraints)}.")
        return self.db.evaluate_constraint(record_id, constraint_name)

    @tool
    def compare_records(self, record_ids: list[str], criterion: str,
                        direction: Literal["desc", "asc"] = "desc") -> dict[str, Any]:
        """Compare records on one field and name the best.

        Numbers (and true/false) rank numerically; strings rank in text order, so ISO dates
        such as "2026-03-01" rank by date and "desc" names the latest. Ties go to the record
        given first. Records lacking the field are listed but not ranked; values that cannot
        be ordered against each other (numbers and strings) give no ``best_id``.

        Args:
            record_ids: The records to compare (at least one).
            criterion: The field to compare, e.g. "reliability".
            direction: "desc" when higher is better, "asc" when lower is better.
        """
        if not record_ids:
            raise _malformed("record_ids needs at least one record ID")
        known = [i for i in record_ids if i in self.db.records]
        if not known:
            raise ToolFailure("error", "no_known_records", "none of the given IDs is a record",
                              hint="Use search_records or list_options to find valid IDs.")
        rows = [{"id": i, "criterion_value": copy_data(self.db.records[i].get(criterion))}
                for i in known]
        result = {"comparison": rows, "best_id": _best(rows, direction), "criterion": criterion,
                  "direction": direction}
        unknown = [i for i in record_ids if i not in self.db.records]
        if unknown:
            result["unknown_ids"] = unknown
        return result

    @tool
    def compute_value(self, operation: Literal["multiply", "add", "subtract", "divide",
                                               "weighted_score"],
                      inputs: dict[str, Any]) -> dict[str, Any]:
        """Compute a value.

        Args:
            operation: multiply, add, subtract and divide take inputs {"a": x, "b": y};
                weighted_score takes inputs {"values": {name: x}, "weights": {name: w}} and
                returns the sum of value times weight over the names in both; a weight with
                no value is ignored (listed in ``ignored_weights``), as is a value with no
                weight.
            inputs: The operands, as described for the operation.
        """
        if operation == "weighted_score":
            values, weights = inputs.get("values"), inputs.get("weights")
            if set(inputs) != {"values", "weights"} or not isinstance(values, dict) \
                    or not isinstance(weights, dict):
                raise _malformed("weighted_score needs inputs {'values': {...}, 'weights': {...}}")
            for k, v in (*values.items(), *weights.items()):
                _number(v, k)
            if not values or not weights:
                raise ToolFailure("error", "missing_inputs",
                                  "weighted_score needs at least one value and one weight")
            value = math.fsum(float(values[k]) * float(w) for k, w in weights.items()
                              if k in values)
        else:
            if set(inputs) != {"a", "b"}:
                raise _malformed(f"{operation} needs inputs {{'a': x, 'b': y}}")
            a, b = _number(inputs["a"], "a"), _number(inputs["b"], "b")
            if operation == "divide" and b == 0:
                raise ToolFailure("error", "division_by_zero", "cannot divide by zero")
            value = {"multiply": a * b, "add": a + b, "subtract": a - b,
                     "divide": a / b if b else 0.0}[operation]
        if not (math.isfinite(value) and abs(value) < MAX_RESULT):
            raise ToolFailure("error", "out_of_range",
                              f"the result is not a finite number below {MAX_RESULT:g} in size")
        value = round(value, 6)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        result = {"value": value, "operation": operation, "inputs_used": inputs}
        ignored = [k for k in inputs.get("weights", {}) if k not in inputs.get("values", {})] \
            if operation == "weighted_score" else []
        if ignored:
            result["ignored_weights"] = ignored
        return result

    @tool(kind="write")
    def submit_decision(self, /, **decision: Any) -> dict[str, Any]:
        """Submit the task's final decision. The task says which fields to submit.

        Args:
            decision: The decision's fields, e.g. {"record_id": "REQ-220", "action": "approve"}.
        """
        if not decision:
            raise ToolFailure("error", "empty_submission", "a submission needs at least one field")
        if not self.judge_submission(decision):
            raise ToolFailure("error", "submission_rejected",
                              "The submission was rejected: it does not meet the task's "
                              "requirements.", hint="Re-read the task and check the evidence.")
        self.accepted_submissions += 1
        return {"accepted": True, "submission_id": f"SUB-{self.accepted_submissions:03d}"}

    def dispatch(self, call: ToolCall, allowed: set[str] | frozenset[str], call_id: str,
                 *, may_be_large: bool = True) -> dict[str, Any]:
        """Run one call and wrap its outcome in the envelope; never raises.

        ``may_be_large=False`` skips the argument-size check, for calls read from an action
        shorter than :data:`MAX_ARGUMENT_CHARS`.
        """
        envelope: dict[str, Any] = {"tool_name": call.name, "call_id": call_id, "status": "ok",
                                    "result": None, "error": None}
        try:
            size = len(json.dumps(call.arguments, ensure_ascii=False)) if may_be_large else 0
            if size > MAX_ARGUMENT_CHARS:
                raise ToolFailure("error", "arguments_too_large",
                                  f"arguments of {call.name!r} are {size} characters of JSON; at "
                                  f"most {MAX_ARGUMENT_CHARS} are accepted")
            if call.name not in allowed:
                raise ToolFailure("error", "tool_not_available",
                                  f"tool {call.name!r} is not available in this task",
                                  hint=f"Available tools: {', '.join(sorted(allowed)) or 'none'}.")
            scripted = self.db.scripted_response(call.name, call.arguments)
            if scripted is not None:  # arguments are checked first, as in the reference
                self.validate(call.name, call.arguments)
                envelope.update(scripted)
                return envelope
            envelope["result"] = self.call(call.name, call.arguments)
        except ToolFailure as failure:
            envelope.update(status=failure.status, result=failure.result, error={
                "type": failure.error_type, "message": failure.message, "recoverable": True,
                **({"hint": failure.hint} if failure.hint else {})})
        except (ToolArgumentError, UnknownToolError) as exc:
            envelope.update(status="error", error={
                "type": "schema_validation_error", "message": str(exc).strip("'\""),
                "recoverable": True})
        except Exception as exc:  # noqa: BLE001 - a tool bug must not escape step()
            envelope.update(status="error", error={
                "type": "dispatch_error", "message": f"{type(exc).__name__}: {exc}",
                "recoverable": False})
        return envelope
