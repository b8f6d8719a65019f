"""Rollout data: each agent's messages in a batch of team episodes, and the team rewards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["Samples", "RolloutBatch"]


@dataclass
class Samples:
    """One agent's messages in a rollout batch.

    ``payload`` holds what the agent's policy needs to score the messages again (observations
    and symbols, or token ids); ``mask`` marks the agent's own message tokens, so log-probs and
    KL are taken over those tokens only.
    """

    agent: int
    episode: np.ndarray
    """``(M,)`` index of each message's episode in the batch."""
    payload: Any
    mask: torch.Tensor
    """``(M, T)`` 1.0 on the agent's message tokens, 0.0 on padding."""
    old_logp: torch.Tensor | None
    """``(M, T)`` per-token log-probs under the policy that sampled the messages; None while
    deferred (a rollout collected with ``defer_scoring``): the agent's update scores them in
    its first pass, or :meth:`~trainers.common.team.Team.score_old` before the policy
    changes."""
    old_dist: torch.Tensor | None = None
    """``(M, T, V)`` full per-token log-distributions of that policy, where they are cheap to
    keep (symbolic teams); they make the per-message KL exact instead of sampled."""

    def __len__(self) -> int:
        return len(self.episode)

    def subset(self, index: np.ndarray | torch.Tensor) -> Samples:
        """The messages at ``index``."""
        index = np.asarray(index)
        rows = torch.from_numpy(index)
        return Samples(self.agent, self.episode[index], self.payload.subset(index),
                       self.mask[rows], None if self.old_logp is None else self.old_logp[rows],
                       None if self.old_dist is None else self.old_dist[rows])


@dataclass
class RolloutBatch:
    """A batch of team episodes: team rewards, problem groups and every agent's messages."""

    rewards: np.ndarray
    """``(B,)`` team reward of each episode."""
    groups: np.ndarray
    """``(B,)`` problem index; episodes of one group share a problem."""
    samples: list[Samples]
    """One entry per agent."""
    scoring_s: float = 0.0
    """Seconds spent scoring the messages' old log-probs (text teams), within the rollout."""
    new_tokens: int = 0
    """Tokens the agents generated (text teams)."""
    transcript: str | None = None
    """The first episode's shared context as text (text teams)."""

    @property
    def episodes(self) -> int:
        """The number of episodes."""
        return len(self.rewards)
