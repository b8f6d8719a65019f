"""A real environment run alongside a simulated episode, for fidelity and hybrid simulation.

Where a domain has a real counterpart (the ``floor`` domain: the deterministic AgentFloor
tools; generated ``mcp`` servers: their executable twin), every agent action is also played on
it, together with the controls that fired on that turn. The simulator then measures how well the
world model predicted the real observation, can fall back to the real observation, and scores
the episode with the real verifier.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld_envs.world.scenario import Control

__all__ = ["RealStep", "Reality"]


@dataclass(frozen=True)
class RealStep:
    """The real environment's answer to one action.

    Attributes:
        observation: The true next observation.
        terminated: Whether the real episode ended on this action.
        ending: Why it ended (e.g. ``submitted``), when it did.
        verdict: The real verifier's verdict, once the real episode is over.
    """

    observation: str
    terminated: bool = False
    ending: str | None = None
    verdict: dict[str, Any] | None = None


class Reality(abc.ABC):
    """The real counterpart of one simulated episode."""

    honours_controls = True
    """Whether a fired control changes what the real counterpart does (False for a reality
    that cannot be perturbed: a rejected action is then still carried out there)."""

    @abc.abstractmethod
    def step(self, action: Any, controls: Sequence[Control] = ()) -> RealStep:
        """Play the action for real, under the controls that fired on this turn (a reality
        that cannot be perturbed, the floor env, ignores them). Never raises on the action's
        content."""
