"""The world model's chat: the system prompt with its slots, user turns and observation turns.

Layout (as in AgentWorld): ``system`` is the domain's prompt with ``{tool_definitions}``,
``{demonstrations}`` and ``{environment}`` filled; each earlier turn is a ``user`` message (the
action, headed ``### Turn N``) and an ``assistant`` message (``**Environment Observation:**``
and the observation); the last message is the current turn's ``user`` message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld_envs.sim.parsing import RESPONSE_MARKER
from agentworld_envs.sim.scenario import Demonstration, Scenario

__all__ = [
    "environment_notes",
    "fence",
    "fill_template",
    "observation_turn",
    "render_demonstrations",
    "user_turn",
]

_SLOT = re.compile(r"\{(tool_definitions|demonstrations|environment)\}")
_BACKTICKS = re.compile(r"`{3,}")

FICTIONAL_NOTE = (
    "This world is fictional. Every person, organisation, place, product and event in it is "
    "invented. Never fall back on real-world facts: invent what the notes leave open, and keep "
    "every invention consistent with the notes and with all earlier observations."
)


def fill_template(template: str, *, tool_definitions: str, demonstrations: str,
                  environment: str) -> str:
    """Fill a system-prompt template's slots in one pass (slot text is never re-substituted)."""
    values = {"tool_definitions": tool_definitions, "demonstrations": demonstrations,
              "environment": environment}
    return _SLOT.sub(lambda m: values[m.group(1)], template)


def fence(text: str, language: str) -> str:
    """A fenced code block that stays closed whatever backticks ``text`` holds."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def user_turn(turn: int, action_text: str, language: str, *, state: str | None = None,
              task: str | None = None, controls: Sequence[str] = ()) -> str:
    """One user message: the turn heading, optional task and state, the action, the controls."""
    parts = [f"### Turn {turn}"]
    if task is not None:
        parts.append(f"**Task Instruction:**\n{task}")
    if state is not None:
        parts.append(f"**Current State:**\n{state}")
    parts.append(f"**Action:**\n{fence(action_text, language)}")
    parts.extend(f"**Simulation Control:** {text}" for text in controls)
    return "\n\n".join(parts)


def observation_turn(observation: str) -> str:
    """One assistant message: the observation after the response marker."""
    return f"{RESPONSE_MARKER}\n{observation}"


def render_demonstrations(demos: Sequence[Demonstration], language: str) -> str:
    """Example transitions for the ``{demonstrations}`` slot."""
    if not demos:
        return "(no demonstrations for this environment)"
    blocks = []
    for number, demo in enumerate(demos, start=1):
        lines = [f"Example {number}"]
        if demo.state is not None:
            lines.append(f"Current State:\n{demo.state}")
        lines.append(f"Action:\n{fence(demo.action, language)}")
        lines.append(f"Output:\n<predicted_observation>\n{demo.observation}\n"
                     "</predicted_observation>")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def environment_notes(scenario: Scenario, fictional: bool) -> str:
    """The ``{environment}`` slot: the agent's task, hidden world notes, fictional mode.

    The scenario's reference answer is never written here: agent text reaches the world model
    verbatim, so anything in its prompt can be talked out of it. The world notes hold the facts
    the world model must keep findable; the answer is for the verifier alone.
    """
    notes = [f"The agent's task (for context only; never solve it for the agent):\n"
             f"{scenario.instruction}"]
    if scenario.world:
        notes.append(f"What this world holds (ground truth for every observation):\n"
                     f"{scenario.world.strip()}")
    if scenario.reference_answer is not None:
        notes.append(
            "Simulation instruction: every fact the task rests on must be findable through "
            "the environment and consistent across observations, but never hand the answer to "
            "the agent unprompted.")
    if fictional:
        notes.append(FICTIONAL_NOTE)
    return "\n\n".join(notes)
