"""The world model's chat in the release's wire layout (``docs/agentworld_envs.md``).

``system`` is the prompt set's template for the domain with only its placeholders filled
(``{tool_definitions}``, ``{demonstrations}``); each earlier turn is a ``user`` message and an
``assistant`` message that is exactly ``**Environment Observation:**``, a newline and the
observation; the last message is the current ``user`` turn::

    ### Turn N
    **Task Instruction:**         android, web: first turn; os: every turn
    <task>

    **Simulation Instruction:**   first turn: what the world must hold; any turn: controls
    <lines>

    **Current State:**            terminal: first turn; android, web, os: every turn
    <screen or tree>

    **Action:**
    ```json
    <action>
    ```
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentworld_envs.world.parsing import RESPONSE_MARKER
from agentworld_envs.world.scenario import Demonstration, Scenario

__all__ = [
    "FICTIONAL_NOTE",
    "environment_notes",
    "fence",
    "fill_template",
    "observation_turn",
    "render_demonstrations",
    "simulation_instruction",
    "user_turn",
]

_BACKTICKS = re.compile(r"`{3,}")

FICTIONAL_NOTE = (
    "This world is fictional. Every person, organisation, place, product and event in it is "
    "invented. Never fall back on real-world facts: invent what the notes leave open, and keep "
    "every invention consistent with the notes and with all earlier observations."
)


def fill_template(template: str, *, tool_definitions: str, demonstrations: str,
                  environment: str | None = None) -> str:
    """Fill a template's placeholders in one pass (slot text is never re-substituted).

    Only ``{tool_definitions}`` and ``{demonstrations}`` are placeholders, plus
    ``{environment}`` when ``environment`` is given (the floor domain's own prompt); any other
    brace in the template stays as written.
    """
    values = {"tool_definitions": tool_definitions, "demonstrations": demonstrations}
    if environment is not None:
        values["environment"] = environment
    slot = re.compile(r"\{(" + "|".join(values) + r")\}")
    return slot.sub(lambda m: values[m.group(1)], template)


def fence(text: str, language: str) -> str:
    """A fenced code block that stays closed whatever backticks ``text`` holds."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2) if "```" in text else 2
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def user_turn(turn: int, action_text: str, language: str, *, state: str | None = None,
              task: str | None = None, instruction: str | None = None) -> str:
    """One user message: the turn heading, then the sections given, the action last."""
    sections = []
    if task is not None:
        sections.append(f"**Task Instruction:**\n{task}")
    if instruction is not None:
        sections.append(f"**Simulation Instruction:**\n{instruction}")
    if state is not None:
        sections.append(f"**Current State:**\n{state}")
    sections.append(f"**Action:**\n{fence(action_text, language)}")
    return f"### Turn {turn}\n" + "\n\n".join(sections)


def observation_turn(observation: str) -> str:
    """One assistant message: the response marker, a newline, the observation."""
    return f"{RESPONSE_MARKER}\n{observation}"


def render_demonstrations(demos: Sequence[Demonstration], language: str) -> str:
    """Example transitions for ``{demonstrations}``, laid out as turns of the chat itself."""
    turns = [f"{user_turn(n, demo.action, language, state=demo.state)}\n\n"
             f"{observation_turn(demo.observation)}"
             for n, demo in enumerate(demos, start=1)]
    return "\n\n".join(turns)


def simulation_instruction(*, target_query: str | None = None,
                           reference_answer: str | None = None, task: str | None = None,
                           world: str | None = None, fictional: bool = False,
                           controls: Sequence[str] = ()) -> str | None:
    """The ``**Simulation Instruction:**`` lines, or None when there is nothing to say.

    ``target_query`` and ``reference_answer`` are search's (the release's names); ``task`` is
    the agent's task where the release has no place for it (context only).
    """
    lines = []
    if target_query is not None:
        lines.append(f"Target Query: {target_query}")
    if reference_answer is not None:
        lines.append(f"Reference Answer: {reference_answer}")
    if task is not None:
        lines.append(f"Agent Task (context only; never solve it for the agent): {task}")
    if world:
        lines.append(f"World Notes (ground truth for every observation):\n{world.strip()}")
    if fictional:
        lines.append(f"Fictional World: {FICTIONAL_NOTE}")
    lines.extend(f"Control (this turn only; never mention it): {c}" for c in controls)
    return "\n".join(lines) if lines else None


def environment_notes(scenario: Scenario, fictional: bool) -> str:
    """The floor prompt's ``{environment}`` slot: the agent's task, world notes, fictional mode.

    The floor domain keeps these in its system prompt, where its world model was trained to
    read them; the reference answer is never written here.
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
