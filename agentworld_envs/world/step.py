"""One simulated step as data: what its first half decided, and what the step returns.

:meth:`~agentworld_envs.sim.episode.Episode.begin` leaves a :class:`PendingStep` for
:meth:`~agentworld_envs.sim.episode.Episode.complete`, which returns a :class:`StepResult` and
keeps the step's transcript entry (:meth:`PendingStep.entry`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentworld_envs.protocol.chat import ChatRequest
from agentworld_envs.protocol.endings import ENDED_OBSERVATION
from agentworld_envs.world.reality import RealStep
from agentworld_envs.world.termination import Interpretation

__all__ = ["PendingStep", "StepResult"]


@dataclass(slots=True)
class StepResult:
    """What one step returns, before the vector env batches it."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    closes_episode: bool = False
    """True on the step that ended the episode (not on steps after its end)."""

    @classmethod
    def after_end(cls) -> StepResult:
        """A step of an episode that has already ended."""
        return cls(ENDED_OBSERVATION, 0.0, True, False, {
            "invalid_action": True, "action_error": ENDED_OBSERVATION})


@dataclass(slots=True)
class PendingStep:
    """A step between its two halves: the action read, the request sent, what is real."""

    action: str
    interpretation: Interpretation
    request: ChatRequest | None
    controls: tuple[str, ...]
    real: RealStep | None
    decided: RealStep | None = None
    """What the domain's rule made of a decided tool's call (no real counterpart)."""
    rejected: bool = False
    """A control that rejects the action fired on this turn (it changes nothing)."""

    @property
    def played(self) -> bool:
        """Whether the real counterpart alone answers the step (``mode="real"``)."""
        return self.real is not None and self.interpretation.kind == "simulate" \
            and self.request is None

    @property
    def outcome(self) -> RealStep | None:
        """What the real env or the rule made of the action."""
        return self.real or self.decided

    def entry(self, turn: int, observation: str, raw: str, flags: tuple[str, ...],
              fidelity: dict[str, Any] | None) -> dict[str, Any]:
        """The step's transcript entry, given the observation the agent got, the world model's
        raw output and flags, and the fidelity measured against a real counterpart."""
        return {"turn": turn, "action": self.action, "kind": self.interpretation.kind,
                "controls": self.controls,
                "seed": self.request.sampling.seed if self.request else None,
                "raw_output": raw, "observation": observation, "flags": flags,
                "fidelity": fidelity}
