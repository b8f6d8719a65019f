"""The AgentFloor verdict of a simulated episode: the real verifier over what the agent saw.

The real env logs each call with the envelope its tools returned and runs
:func:`floor_tasks.verifier.verify` over that log. Here the log is rebuilt from the simulated
episode alone: the calls are read from each action exactly as the real env reads them
(:func:`~agentworld_envs.protocol.tool_calls.parse_action`), and each call's status, result and
error come from the envelope the agent was shown, which the world model predicted. So the
reward depends on the simulation: a world model that answers with garbage gives failed calls,
and checks such as "observed the status before submitting" fail with them.

An envelope is matched to its call by position and tool name. A call with no envelope, or an
``ok`` envelope whose result lacks the fields the verifier reads for that tool, counts as a
failed call (``status`` ``error``, type ``unreadable_result``): the verifier never sees a shape
it cannot read.

In an episode with no real counterpart (``real_counterpart=False``) the submissions are decided
here too (:func:`decided_observation`). By default (``by="shown"``) the task's rule is applied
to what the simulation showed. A branching task's rule is read off its instances (C1: status
``active`` gives ``assign_primary``, ``inactive`` gives ``assign_fallback``), so a world model
that shows the status inverted has the inverted decision accepted, and the agent learns what it
was shown. With ``by="scenario"`` the submission must meet the scenario's own expectation (the
decision its records call for), so the same world model has the true decision accepted after
showing the status that calls for the other one: the agent learns the inverted rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.world.scenario import FloorRef
from floor_tasks.database import load_fixture
from floor_tasks.task import Task, load_task
from floor_tasks.task_sets import final_submission
from floor_tasks.turns import MAX_CALLS_PER_TURN, play_turn
from floor_tasks.verifier import Trace, judge_submission, verify

__all__ = ["decided_observation", "decision_rule", "simulated_verdict"]

_SHAPES: dict[str, dict[str, type]] = {
    "lookup_record": {"record_id": str, "fields": dict},
    "get_attribute": {"record_id": str, "attribute": str},
    "compare_records": {"criterion": str, "comparison": list},
    "check_constraint": {"record_id": str, "constraint_name": str},
    "list_options": {"options": list},
    "search_records": {"matches": list},
}
"""The result fields the verifier reads from an ok envelope, by tool."""
_ROWS = {"compare_records": "comparison", "list_options": "options", "search_records": "matches"}
"""Result lists whose rows the verifier reads by their ``id``."""
_STATUSES = ("ok", "not_found", "error")


def simulated_verdict(ref: FloorRef, actions: Sequence[str], observations: Sequence[str],
                      ending: str | None) -> dict[str, Any]:
    """The verifier's verdict on the episode the agent saw (see the module docstring)."""
    trace = _replayed(ref, actions, observations, until_submitted=True)
    trace.termination = ending
    return verify(trace)


def _envelopes(observation: str) -> Iterator[dict[str, Any]]:
    return iter(find_objects(observation) if isinstance(observation, str) else [])


def _next(shown: Iterator[dict[str, Any]], tool: str | None) -> dict[str, Any] | None:
    """The next shown envelope for ``tool``, skipping any that belong to no call here."""
    return next((e for e in shown if e.get("tool_name") == tool), None)


def _log(trace: Trace, turn: int, tool: str | None, arguments: dict[str, Any],
         envelope: dict[str, Any] | None, parse_error: str | None = None) -> dict[str, Any]:
    """Log a call as the real env does, its outcome read from ``envelope`` (a call that could
    not be read is a malformed parse error)."""
    status, result, error = _outcome(tool, envelope)
    if parse_error is not None:
        status, result, error = "error", None, {"type": "parse_error", "message": parse_error}
    return trace.log_call(turn, tool, arguments, (envelope or {}).get("call_id"), status,
                          result, error, malformed=parse_error is not None)


def _outcome(tool: str | None, envelope: dict[str, Any] | None) -> tuple[str, Any, Any]:
    unreadable = ("error", None, {"type": "unreadable_result",
                                  "message": "the observation shows no readable result"})
    if envelope is None or envelope.get("status") not in _STATUSES:
        return unreadable
    error = envelope.get("error")
    error = error if isinstance(error, dict) else None
    result = envelope.get("result")
    if envelope["status"] == "ok" and not _readable(tool, result):
        return unreadable
    return envelope["status"], result, error


def _readable(tool: str | None, result: Any) -> bool:
    shape = _SHAPES.get(tool or "")
    if shape is None:
        return True
    if not isinstance(result, dict) or not all(isinstance(result.get(k), t)
                                               for k, t in shape.items()):
        return False
    rows = result.get(_ROWS.get(tool or "", ""), [])
    return all(isinstance(r, dict) and isinstance(r.get("id"), str | int) for r in rows)


def decided_observation(ref: FloorRef, actions: Sequence[str], observations: Sequence[str],
                        action: str, by: str = "shown") -> tuple[str, bool] | None:
    """The envelopes of an action made only of ``submit_decision`` calls, in an episode that
    has no real counterpart, and whether one was accepted: accepted when the submission meets
    the task's expectation, with its decision given by the task's rule over the fields the
    simulation showed before (``by="shown"``) or as the scenario's records call for
    (``by="scenario"``; see the module docstring). None for any other action, or a task
    without literal expectations."""
    if by not in ("shown", "scenario"):
        raise ValueError(f"by must be 'shown' or 'scenario', not {by!r}")
    parsed = parse_action(action)
    task = load_task(ref.task_id)
    spec = task.submission
    if (parsed.errors or not parsed.calls or spec is None or spec.expect is None
            or any(call.name != "submit_decision" for call in parsed.calls)):
        return None
    variant = task.variant(ref.variant)
    expect = variant.filled(spec.expect)
    trace = _replayed(ref, actions, observations)
    rule = decision_rule(task) if by == "shown" else None
    if rule is not None:
        key, field, table = rule
        record = next(v for k, v in expect.items() if k != key)
        expect[key] = table.get(json.dumps(_shown(trace, record, field)))
    db = load_fixture(task.fixture)
    expected = type(spec)(expect=expect)
    # numbered as the real env numbers its log: parse errors and the cap's error count too
    done = len(trace.calls) + (len(parsed.calls) > MAX_CALLS_PER_TURN)
    envelopes = []
    for n, call in enumerate(parsed.calls[:MAX_CALLS_PER_TURN], start=done + 1):
        unknown = rule is not None and expect[rule[0]] is None  # a value the rule lacks
        accepted = not unknown and judge_submission(expected, db, call.arguments)
        envelopes.append(json.dumps({
            "tool_name": call.name, "call_id": f"{task.id}_{call.name}_{n}",
            "status": "ok" if accepted else "error",
            "result": {"accepted": True, "submission_id": "SUB-001"} if accepted else None,
            "error": None if accepted else {
                "type": "submission_rejected", "recoverable": True,
                "message": "The submission was rejected: it does not meet the task's "
                           "requirements."}}, ensure_ascii=False))
        if accepted:
            break
    return "\n".join(envelopes), accepted


def _replayed(ref: FloorRef, actions: Sequence[str], observations: Sequence[str], *,
              until_submitted: bool = False) -> Trace:
    """The trace the real env would log had its tools shown ``observations``."""
    task = load_task(ref.task_id)
    trace = Trace(variant=task.variant(ref.variant), db=load_fixture(task.fixture))
    for turn, (action, observation) in enumerate(zip(actions, observations, strict=False), 1):
        shown = _envelopes(observation)
        played = play_turn(
            trace, action,
            lambda call, turn=turn, shown=shown: _log(trace, turn, call.name, call.arguments,
                                                      _next(shown, call.name)),
            lambda error, turn=turn, shown=shown: _log(trace, turn, None, {},
                                                       _next(shown, None), error.message))
        if played.submitted and until_submitted:
            break
    return trace


def _shown(trace: Trace, record_id: Any, field: str) -> Any:
    """The value of a record's field that the latest ok read showed (None if none did)."""
    value = None
    for call in trace.ok_calls:
        result = call["result"]
        if not isinstance(result, dict) or result.get("record_id") != record_id:
            continue
        if call["tool_name"] == "lookup_record" and field in result["fields"]:
            value = result["fields"][field]
        elif call["tool_name"] == "get_attribute" and result.get("attribute") == field:
            value = result.get("value")
    return value


def decision_rule(task: Task) -> tuple[str, str, dict[str, Any]] | None:
    """A branching task's rule as its instances give it: the decision's key, the field read
    before deciding, and each value of that field (JSON) mapped to its decision."""
    fields = [c.params["field"] for c in [*task.trajectory, *task.forbidden]
              if c.check == "observed_before_submission"]
    if not fields:
        return None
    db = load_fixture(task.fixture)
    names = ["v0", *(v for v in task.variant_names if v.startswith("i"))]
    submitted = {v: final_submission(task.id, v) for v in names}
    key = next((k for k in submitted["v0"] if len({json.dumps(s.get(k))
                for s in submitted.values()}) > 1 and submitted["v0"][k] not in db.records),
               None)
    if key is None:
        return None
    table = {}
    for name, submission in submitted.items():
        record = next(v for k, v in submission.items() if k != key)
        value = task.variant(name).params.get(fields[0], db.records[record].get(fields[0]))
        table[json.dumps(value)] = submission[key]
    return key, fields[0], table
