"""Text teams for LLM agents: roles, the shared transcript, handoff and answer checking.

Each agent has a role with a system prompt (planner, solver, critic, answerer, ...). It observes
the problem statement, its private brief (if the task splits information among agents) and the
transcript so far, and replies with one message. The last agent is the answerer: its message is
checked by the task's verifier, which reads the text after the last ``ANSWER:`` marker, to the
end of the message (a reasoning model's ``<think>`` block, up to its ``</think>``, left out).

Handoff is ``"rotation"`` (agents speak in order for ``rounds`` rounds) or ``"router"``: each
message may end with ``NEXT: <agent or role>`` to choose the next speaker (the next agent in
order otherwise), and the episode ends when the answerer speaks, or is truncated after
``max_cycles * n_agents`` messages.
"""

from __future__ import annotations

import abc
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)
from team_envs.core import (
    TeamEpisode,
    TeamTask,
    agent_name,
    check_int,
    check_roles,
    check_team_size,
)

__all__ = [
    "ROLE_PROMPTS",
    "Problem",
    "TextTeamTask",
    "ReasoningTask",
    "TextEpisode",
    "ReasoningEpisode",
    "default_roles",
    "final_answer",
]

ROLE_PROMPTS: dict[str, str] = {
    "planner": "You are the planner. Read the problem and lay out the steps the team should "
               "take. Do not give the final answer.",
    "solver": "You are a solver. Carry out the next steps with the information you have and "
              "state your intermediate results.",
    "critic": "You are the critic. Check the team's work so far, point out mistakes and give "
              "corrected results.",
    "answerer": "You are the answerer. Use the team's work to give the final answer.",
}
"""System prompts of the built-in roles; tasks may add roles with ``role_prompts``."""

_ANSWER = re.compile(r"(\*\*)?\bANSWER(\*\*)?\s*:")
"""The answer marker: upper case, as the answerer's prompt asks (a prose "the answer: ..." is
not one), in markdown bold or not (``**ANSWER:**``, ``**ANSWER**:``, ``**ANSWER: 42**``)."""
_END_OF_THINKING = "</think>"
# [^\S\n]: whitespace within the line, so that blank lines are not rescanned from each one.
# Markdown bold may wrap the marker or the name (``**NEXT:** critic``, ``NEXT: **critic**``).
_NEXT = re.compile(r"^[^\S\n]*(?:\*\*)?next(?:\*\*)?\s*:\s*(?:\*\*\s*)?(\S+)",
                   re.IGNORECASE | re.MULTILINE)
_HANDOFFS = ("rotation", "router")


def default_roles(n_agents: int) -> tuple[str, ...]:
    """Planner, solvers, critic and answerer, as fits the team size."""
    if n_agents == 2:
        return ("solver", "answerer")
    if n_agents == 3:
        return ("planner", "solver", "answerer")
    return ("planner",) + ("solver",) * (n_agents - 3) + ("critic", "answerer")


def final_answer(message: str) -> str:
    """The answer in a message: everything after its last ``ANSWER:`` (several lines if so
    written; markdown bold around the marker or the answer left out), else its last non-empty
    line; stripped. A reasoning model's thinking, everything up to the last ``</think>``, is
    not read (as vLLM's reasoning parsers split it off).

    Example:
        >>> final_answer("Sum: 12. **ANSWER:** 12"), final_answer("ANSWER: **Alice**")
        ('12', 'Alice')
    """
    message = _after_thinking(message)
    last = deque(_ANSWER.finditer(message), maxlen=1)
    if last:
        opened, closed = last[0].groups()  # "**ANSWER**:" opens and closes its own bold
        return _unbolded(message[last[0].end():].strip(), bold_marker=bool(opened and not closed))
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _after_thinking(message: str) -> str:
    """``message`` without a reasoning model's thinking: what follows its last ``</think>``."""
    return message.rpartition(_END_OF_THINKING)[2]


def _unbolded(answer: str, bold_marker: bool) -> str:
    """``answer`` without the markdown bold that closes its marker (``**ANSWER:** 42``) or
    wraps it (``**ANSWER: 42**``, ``ANSWER: **42**``)."""
    if bold_marker and answer.startswith("**"):
        answer = answer[2:].lstrip()
    elif bold_marker and answer.endswith("**"):
        answer = answer[:-2].rstrip()
    if len(answer) > 4 and answer.startswith("**") and answer.endswith("**"):
        answer = answer[2:-2].strip()
    return answer


@dataclass(frozen=True)
class Problem:
    """One generated problem: public statement, private briefs and what the verifier needs."""

    statement: str
    briefs: tuple[str, ...]
    """One private brief per agent ("" for none)."""
    answer: Any
    details: dict[str, Any] = field(default_factory=dict)
    """Anything else the verifier or a reference solver needs."""


class TextTeamTask(TeamTask):
    """Roles, handoff and spaces shared by the text team families.

    Args:
        n_agents: Team size, 2 to 8; by default 3, or with ``roles`` their number (another
            number raises ``ValueError``).
        roles: One role name per agent; :func:`default_roles` by default.
        role_prompts: System prompts for roles, added to or replacing :data:`ROLE_PROMPTS`.
        handoff: ``"rotation"`` or ``"router"``.
        rounds: Rounds of speaking in rotation.
        max_cycles: Message cap in router mode, in multiples of the team size (3 when None).
            In rotation an episode is ``rounds`` cycles long; a cap below that (PettingZoo's
            ``pettingzoo.make(..., max_cycles=)``) is refused rather than ignored.
        max_message_chars: Longer messages are cut to this many characters.
    """

    answer_format: ClassVar[str] = "ANSWER: <answer>"

    def __init__(self, n_agents: int | None = None, roles: Sequence[str] | None = None,
                 role_prompts: Mapping[str, str] | None = None, handoff: str = "rotation",
                 rounds: int = 1, max_cycles: int | None = None,
                 max_message_chars: int = 4000) -> None:
        if roles is None:
            self.roles = default_roles(check_team_size(3 if n_agents is None else n_agents))
        else:
            self.roles = check_roles(roles, n_agents)
        if role_prompts is not None and not (isinstance(role_prompts, Mapping) and all(
                isinstance(prompt, str) for prompt in role_prompts.values())):
            raise ValueError(f"role_prompts must map role names to prompt texts, got "
                             f"{role_prompts!r}")
        self.role_prompts = {**ROLE_PROMPTS, **(role_prompts or {})}
        missing = sorted(set(self.roles) - set(self.role_prompts))
        if missing:
            raise ValueError(f"roles {missing} have no prompt; pass role_prompts")
        if handoff not in _HANDOFFS:
            raise ValueError(f"handoff must be one of {_HANDOFFS}, got {handoff!r}")
        self.handoff = handoff
        self.rounds = check_int("rounds", rounds, 1)
        self.max_cycles = 3 if max_cycles is None else check_int("max_cycles", max_cycles, 1)
        if handoff == "rotation" and max_cycles is not None and self.max_cycles < self.rounds:
            raise ValueError(f"max_cycles={max_cycles!r} is below rounds={rounds!r}: a rotation "
                             f"episode is rounds cycles long, so every one would be cut short "
                             f"(reward 0); lower rounds, or use handoff='router'")
        self.max_message_chars = check_int("max_message_chars", max_message_chars, 1)

    def message_limit(self, problem: Problem) -> int:
        """How many characters of a message on ``problem`` are kept."""
        return self.max_message_chars

    @property
    def max_messages(self) -> int:
        """The most messages an episode can hold."""
        cycles = self.rounds if self.handoff == "rotation" else self.max_cycles
        return cycles * self.n_agents

    def observation_space(self, agent: int) -> spaces.Dict:
        """``system`` prompt, user ``text``, tool schemas as JSON ``tools`` and ``turn``."""
        return spaces.Dict({"system": UnicodeText(), "text": UnicodeText(),
                            "tools": UnicodeText(), "turn": spaces.Discrete(
                                self.max_messages + 1)})

    def action_space(self, agent: int) -> UnicodeText:
        """Any text."""
        return UnicodeText(ACTION_MAX_LENGTH)

    def system_prompt(self, agent: int) -> str:
        """The role prompt of ``agent``, with the team's format rules."""
        parts = [self.role_prompts[self.roles[agent]]]
        if agent == self.n_agents - 1:
            parts.append(f"End with the final answer on its own line as '{self.answer_format}'.")
        elif self.handoff == "router":
            parts.append("End with 'NEXT: <agent name>' to choose who speaks next.")
        return " ".join(parts)



class ReasoningTask(TextTeamTask):
    """A text task with procedurally generated problems and a verifier of final answers."""

    @abc.abstractmethod
    def generate(self, rng: np.random.Generator) -> Problem:
        """A new problem, every random choice drawn from ``rng``."""

    @abc.abstractmethod
    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """The verifier: team reward for an answer (as read by :func:`final_answer`)."""

    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> ReasoningEpisode:
        """An episode on a newly generated problem; ``options`` asking for a held-out split,
        which the task has not, raise ``ValueError``."""
        self.refuse_held_out(options)
        return ReasoningEpisode(self, self.generate(rng))


class TextEpisode(TeamEpisode):
    """A text team episode: the shared transcript and whose turn it is."""

    def __init__(self, task: TextTeamTask, problem: Problem) -> None:
        self.task = task
        self.problem = problem
        self.transcript: list[dict[str, Any]] = []
        """Entries ``{"agent": index or None, "name", "content"}``; None marks tool output."""
        self._speaker: int | None = 0
        self._messages = 0

    @property
    def speaker(self) -> int | None:
        """The agent whose turn it is."""
        return self._speaker

    @property
    def truncated(self) -> bool:
        """True when the message cap was hit before the answerer spoke."""
        return self._speaker is not None and self._messages >= self.task.max_messages

    def tools(self, agent: int) -> str:
        """Tool schemas offered to ``agent``, as JSON text ("" for none)."""
        return ""

    def observe(self, agent: int) -> dict[str, Any]:
        """System prompt, the user message (problem, brief, transcript, whose turn it is) and
        tools."""
        return {"system": self.task.system_prompt(agent), "text": self._user_text(agent),
                "tools": self.tools(agent), "turn": self._messages}

    def _user_text(self, agent: int) -> str:
        task, speaker = self.task, None if self.truncated else self.speaker
        parts = [self.problem.statement]
        if self.problem.briefs[agent]:
            parts.append(f"Only you can see this: {self.problem.briefs[agent]}")
        team = ", ".join(f"{agent_name(i)} ({role})" for i, role in enumerate(task.roles))
        lines = [f"[{entry['name']}] {entry['content']}" for entry in self.transcript]
        parts.append(f"Team: {team}.\nConversation so far:\n" + ("\n".join(lines) or "(nothing)"))
        if speaker == agent:
            turn = "It is your turn."
        elif speaker is None:
            turn = "The conversation has ended."
        else:
            turn = f"It is {agent_name(speaker)}'s turn ({task.roles[speaker]})."
        parts.append(f"You are {agent_name(agent)} ({task.roles[agent]}). {turn}")
        text = "\n\n".join(parts)
        return text if len(text) <= OBSERVATION_MAX_LENGTH else text[-OBSERVATION_MAX_LENGTH:]

    def record(self, agent: int | None, name: str, content: str) -> None:
        """Append an entry to the shared transcript."""
        self.transcript.append({"agent": agent, "name": name, "content": content})

    def act(self, action: Any) -> dict[str, Any]:
        """Append the speaker's message and hand over."""
        speaker, text, info = self.append(action)
        self._speaker = self._next_speaker(speaker, text)
        return info

    def append(self, action: Any) -> tuple[int, str, dict[str, Any]]:
        """Record the speaker's message, cut to length; a non-string counts as an empty message.

        Returns:
            The speaker, the recorded text and the step info.
        """
        speaker = self._speaker
        invalid = not isinstance(action, str)
        text = "" if invalid else action
        limit = self.task.message_limit(self.problem)
        clipped = len(text) > limit
        text = text[:limit]
        self.record(speaker, f"{agent_name(speaker)} · {self.task.roles[speaker]}", text)
        self._messages += 1
        return speaker, text, {"invalid_action": invalid, "message_clipped": clipped}

    def _next_speaker(self, speaker: int, text: str) -> int | None:
        n = self.task.n_agents
        if self.task.handoff == "rotation":
            return None if self._messages >= self.task.max_messages else (speaker + 1) % n
        if speaker == n - 1:
            return None
        routed = self._route(text)
        return routed if routed is not None and routed != speaker else (speaker + 1) % n

    def _route(self, text: str) -> int | None:
        found = _NEXT.findall(_after_thinking(text))
        if not found:
            return None
        target = found[-1].strip(".,;:'\"`()[]*").lower()
        for i, role in enumerate(self.task.roles):
            if target in (agent_name(i), role.lower()):
                return i
        return None

    def render(self) -> str:
        """Statement, briefs and transcript."""
        lines = [self.problem.statement]
        lines += [f"(brief for {agent_name(i)}: {brief})"
                  for i, brief in enumerate(self.problem.briefs) if brief]
        lines += [f"[{entry['name']}] {entry['content']}" for entry in self.transcript]
        return "\n".join(lines)


class ReasoningEpisode(TextEpisode):
    """An episode of a :class:`ReasoningTask`: the answerer's last message is checked."""

    task: ReasoningTask

    def final_message(self) -> str:
        """The answerer's last message ("" if it never spoke)."""
        last = self.task.n_agents - 1
        return next((e["content"] for e in reversed(self.transcript) if e["agent"] == last), "")

    def verdict(self) -> tuple[float, dict[str, Any]]:
        """Check the answerer's final answer."""
        answer = final_answer(self.final_message())
        reward, details = self.task.check(self.problem, answer)
        return reward, {"passed": reward == 1.0, "answer": answer, **details}
