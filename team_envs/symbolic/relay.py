"""The relay team (``team_envs/relay-v0``) in PettingZoo's AEC and Parallel forms.

The rules and keyword arguments are :class:`RelayTask`'s, below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, wrap
from team_envs.symbolic.tasks import ChainTask

__all__ = ["RelayTask", "env", "raw_env", "parallel_env"]


class RelayTask(ChainTask):
    """A whisper chain: ``agent_0`` sees a secret message and the last agent must repeat it.

    The reward is the fraction of the secret's symbols the last agent gets right (or, with
    ``credit="steps"``, that all agents get right).
    """

    family = "relay"

    def private_nvec(self, agent: int) -> tuple[int, ...]:
        """Only the sender has an input: the secret."""
        return (self.vocab_size,) * self.message_length if agent == 0 else ()

    def sample_private(self, rng: np.random.Generator, size: int) -> list[np.ndarray]:
        """A uniform secret for the sender."""
        secret = rng.integers(self.vocab_size, size=(size, self.message_length))
        return [secret] + [np.zeros((size, 0), dtype=np.int64)] * (self.n_agents - 1)

    def targets(self, private: Sequence[np.ndarray]) -> np.ndarray:
        """Every agent should pass the secret on."""
        return np.repeat(private[0][:, None, :], self.n_agents, axis=1)

    def describe_private(self, agent: int, private: np.ndarray) -> str:
        """``secret: c a`` for the sender, ``-`` otherwise."""
        return f"secret: {self.symbols(private)}" if private.size else "-"

class raw_env(SharedContextEnv):
    """The relay team as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "relay_v0"}
    task_type = RelayTask


def env(**kwargs: Any) -> AECEnv:
    """The relay team as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """The relay team in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
