"""How a domain reads one agent action, and how episodes end.

The world model predicts only the next observation; it never says that an episode is over.
Episodes end through each domain's own interface, read from the action itself: a final answer
in the tool domains, an empty keystroke list in the terminal, ``send_msg_to_user`` or
``report_infeasible`` on the web, a ``status`` action on Android, ``DONE`` or ``FAIL`` on the
desktop. The step budget truncates the rest. An ending action is answered locally, except where
the release has the world model answer it (the terminal's ``[]``: ``simulate`` with an
``ending``): the env still decides that the episode is over (:func:`step_end`). The endings'
names are :mod:`agentworld_envs.protocol.endings`. Before a domain reads an action,
:func:`action_text` makes it safe text, or says why it cannot be used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentworld_envs.protocol.endings import STEP_BUDGET_EXHAUSTED
from agentworld_envs.world.reality import RealStep

__all__ = [
    "Interpretation",
    "action_text",
    "finish",
    "invalid",
    "simulate",
    "step_end",
]

@dataclass(frozen=True, slots=True)
class Interpretation:
    """What one action means to the simulator.

    Attributes:
        kind: ``simulate`` (ask the world model), ``finish`` (the episode ends here) or
            ``invalid`` (the action cannot be performed; nothing changes).
        action_text: The action as the world model sees it (``simulate``).
        language: Code-fence language of ``action_text`` (``json`` or ``python``).
        tools: Tools the action calls, for controls and checks.
        ending: Why the episode ends (``finish``, or a ``simulate`` that ends it), e.g.
            ``final_answer`` or ``infeasible``.
        answer: The agent's answer or message to the user (``finish``), if any.
        observation: What the agent sees without asking the world model (``finish``, ``invalid``).
        error: What was wrong with the action (``invalid``).
    """

    kind: Literal["simulate", "finish", "invalid"]
    action_text: str = ""
    language: str = "json"
    tools: tuple[str, ...] = ()
    ending: str | None = None
    answer: str | None = None
    observation: str = ""
    error: str | None = None


def simulate(action_text: str, language: str = "json", tools: tuple[str, ...] = (),
             ending: str | None = None) -> Interpretation:
    """An action the world model must answer; with ``ending``, the episode ends after it."""
    return Interpretation("simulate", action_text=action_text, language=language, tools=tools,
                          ending=ending)


def finish(ending: str, observation: str, answer: str | None = None) -> Interpretation:
    """An action that ends the episode through the domain's interface."""
    return Interpretation("finish", ending=ending, answer=answer, observation=observation)


def invalid(error: str, observation: str) -> Interpretation:
    """An action that cannot be performed; ``observation`` explains why."""
    return Interpretation("invalid", error=error, observation=observation)


def action_text(action: Any, limit: int) -> tuple[str, str | None]:
    """The action as safe text, and why it cannot be used (None when it can)."""
    if not isinstance(action, str):
        return "", f"an action must be a string, got {type(action).__name__}"
    if len(action) > limit:
        return "", f"the action is {len(action)} characters long; the limit is {limit}"
    if action.isascii():
        return action, None
    return action.encode("utf-8", "replace").decode("utf-8"), None


def step_end(interpretation: Interpretation, outcome: RealStep | None, turn: int,
             budget: int) -> tuple[bool, bool, str | None]:
    """Whether step ``turn`` terminates or truncates the episode, and its ending (None while it
    goes on). ``outcome`` is what a real counterpart or a domain rule made of the action."""
    terminated = (interpretation.kind != "invalid" and interpretation.ending is not None) \
        or bool(outcome and outcome.terminated)
    truncated = not terminated and turn >= budget
    if truncated:
        return terminated, truncated, STEP_BUDGET_EXHAUSTED
    if terminated:
        return terminated, truncated, interpretation.ending or (
            outcome.ending if outcome else None)
    return terminated, truncated, None
