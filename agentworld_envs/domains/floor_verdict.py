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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.sim.scenario import FloorRef
from agentworld_envs.sim.termination import STEP_BUDGET
from floor_tasks.database import load_fixture
from floor_tasks.env import MAX_CALLS_PER_TURN
from floor_tasks.task import load_task
from floor_tasks.verifier import Trace, verify

__all__ = ["simulated_verdict"]

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
_BUDGET_ENDING = "step_budget_exhausted"
"""What the real env calls the simulator's ``step_budget`` ending (the others share names)."""


def simulated_verdict(ref: FloorRef, actions: Sequence[str], observations: Sequence[str],
                      ending: str | None) -> dict[str, Any]:
    """The verifier's verdict on the episode the agent saw (see the module docstring)."""
    task = load_task(ref.task_id)
    trace = Trace(variant=task.variant(ref.variant), db=load_fixture(task.fixture))
    for turn, (action, observation) in enumerate(zip(actions, observations, strict=False), 1):
        if _play_turn(trace, turn, action, observation):
            break
    trace.termination = _BUDGET_ENDING if ending == STEP_BUDGET else ending
    return verify(trace)


def _play_turn(trace: Trace, turn: int, action: str, observation: str) -> bool:
    """Log one turn's calls; True when an accepted submission ended the episode."""
    parsed = parse_action(action)
    shown = _envelopes(observation)
    for error in parsed.errors:
        _log(trace, turn, None, {}, _next(shown, None), parse_error=error.message)
    for call in parsed.calls[:MAX_CALLS_PER_TURN]:
        logged = _log(trace, turn, call.name, call.arguments, _next(shown, call.name))
        if call.name == "submit_decision" and logged["status"] == "ok":
            return True
    if parsed.is_final_answer:
        trace.final_answer = parsed.text
    return False


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
