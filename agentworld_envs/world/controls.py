"""Control instructions: which perturbations fire on a turn, and how the world model is told.

A fired control becomes a ``**Simulation Control:**`` line in that turn's user message. The
system prompts tell the world model that such a line overrides realism for that turn only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentworld_envs.world.scenario import Control

__all__ = ["CONTROL_TEXT", "REJECTING", "control_text", "fired_controls"]

CONTROL_TEXT = {
    "tool_error": (
        "This action fails on the server side. Answer with a realistic internal error in the "
        "exact format this environment uses for failures, and change no state."
    ),
    "rate_limit": (
        "The caller has exceeded its rate limit. Reject this action with the environment's usual "
        "rate-limit error (an HTTP 429-style message with a retry-after hint); change no state."
    ),
    "empty_results": (
        "This action succeeds but finds nothing. Return a well-formed result that is empty "
        "(no items, no matches, no rows)."
    ),
    "stale_data": (
        "Answer from an outdated snapshot: the result is well-formed but reflects an older state "
        "of the world (earlier dates, superseded values), with no hint that it is stale."
    ),
    "custom": "",
}

REJECTING = frozenset({"tool_error", "rate_limit"})
"""Kinds that reject the action: it changes nothing, so no check credits it as done."""


def _applies(control: Control, tools: Sequence[str]) -> bool:
    return control.tools is None or any(t in control.tools for t in tools)


def control_text(control: Control) -> str:
    """What the world model is told when the control fires: its kind's text, then its note."""
    return " ".join(p for p in (CONTROL_TEXT[control.kind], control.note or "") if p)


def fired_controls(controls: Sequence[Control], turn: int, tools: Sequence[str],
                   rng: np.random.Generator) -> list[Control]:
    """The controls that fire on this turn, in order.

    A control with ``turns`` fires on those turns. Otherwise it fires with its ``probability``,
    drawn from ``rng`` whenever the probability is below 1, whatever the action, so the number
    of draws does not depend on the action's content.

    Args:
        controls: The scenario's and the env's controls, in order.
        turn: The 1-based turn number.
        tools: Tools the action calls (empty in state domains).
        rng: The episode's random generator.
    """
    fired = []
    for control in controls:
        if control.turns is not None:
            hit = turn in control.turns
        elif control.probability < 1.0:
            hit = bool(rng.random() < control.probability)
        else:
            hit = True
        if hit and _applies(control, tools):
            fired.append(control)
    return fired
