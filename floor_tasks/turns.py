"""One assistant turn of an AgentFloor episode, read and logged: the loop that the real env
(:class:`floor_tasks.env.FloorEnv`) and the verdict over a simulated episode
(:mod:`agentworld_envs.domains.floor.verdict`) share. They differ only in where a call's
envelope comes from: the real tools, or the observation the simulation showed.

The calls are read with :func:`~agentworld_envs.protocol.tool_calls.parse_action`; each parse
error, and a turn of more than :data:`MAX_CALLS_PER_TURN` calls, is logged as a malformed call;
the first :data:`MAX_CALLS_PER_TURN` calls are run in order, up to an accepted submission.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld_envs.protocol.tool_calls import ParseError, ToolCall, parse_action
from floor_tasks.verifier import Trace

__all__ = ["MAX_CALLS_PER_TURN", "Turn", "play_turn"]

MAX_CALLS_PER_TURN = 32
"""Calls run in one turn; the rest are dropped, with a parse error saying so."""

Envelope = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """What one turn did: the envelopes in order, and how it ended the episode, if it did."""

    envelopes: list[Envelope]
    submitted: bool
    """An accepted ``submit_decision`` call ended the episode."""
    final_answer: bool
    """The action called no tool: its text is the final answer (logged in the trace)."""


def play_turn(trace: Trace, action: str, run_call: Callable[[ToolCall], Envelope],
              parse_error: Callable[[ParseError], Envelope]) -> Turn:
    """Read ``action``, log its parse errors with ``parse_error`` and run its calls with
    ``run_call`` (each logs its call into ``trace`` and returns the envelope)."""
    parsed = parse_action(action)
    envelopes = [parse_error(error) for error in parsed.errors]
    if len(parsed.calls) > MAX_CALLS_PER_TURN:
        envelopes.append(parse_error(ParseError(
            f"{len(parsed.calls)} calls in one turn; only the first {MAX_CALLS_PER_TURN} were "
            "run", "")))
    for call in parsed.calls[:MAX_CALLS_PER_TURN]:
        envelopes.append(run_call(call))
        if call.name == "submit_decision" and envelopes[-1]["status"] == "ok":
            return Turn(envelopes, submitted=True, final_answer=False)
    if parsed.is_final_answer:
        trace.final_answer = parsed.text
    return Turn(envelopes, submitted=False, final_answer=parsed.is_final_answer)
