"""The compositional team (``team_envs/compositional-v0``) in PettingZoo's AEC and Parallel forms.

The rules and keyword arguments are :class:`CompositionalTask`'s, below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, check_roles, wrap
from team_envs.symbolic.tasks import ChainTask

__all__ = ["CompositionalTask", "env", "raw_env", "parallel_env"]


_OPS: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "add": lambda total, x, v: (total + x) % v,
    "sub": lambda total, x, v: (total - x) % v,
    "relay": lambda total, x, v: total,
}


class CompositionalTask(ChainTask):
    """A running computation: agent ``i`` applies its role to the total so far and its number.

    Starting from 0, the roles fold left over the agents' private numbers (per message position,
    modulo ``vocab_size``): ``add`` adds, ``sub`` subtracts, ``relay`` has no number and passes
    the total on. Each agent should say the total so far; the reward is the fraction of positions
    where the last message (or, with ``credit="steps"``, every message) holds its total.

    Args:
        n_agents: Team size, 2 to 8; by default 3, or with ``roles`` their number (another
            number raises ``ValueError``).
        roles: One role per agent (``add``, ``sub`` or ``relay``); ``n_agents`` ``add`` by default.
        **kwargs: See :class:`SymbolicTask`.
    """

    family = "compositional"

    def __init__(self, n_agents: int | None = None, roles: Sequence[str] | None = None,
                 **kwargs: Any) -> None:
        if roles is not None:
            roles = check_roles(roles, n_agents)
            unknown = sorted(set(roles) - set(_OPS))
            if unknown:
                raise ValueError(f"unknown compositional roles {unknown}; use {sorted(_OPS)}")
            n_agents = len(roles)
        self._given_roles = roles
        super().__init__(n_agents=3 if n_agents is None else n_agents, **kwargs)

    def _roles(self, n_agents: int) -> tuple[str, ...]:
        return ("add",) * n_agents if self._given_roles is None else self._given_roles

    def private_nvec(self, agent: int) -> tuple[int, ...]:
        """A number per message position, except for ``relay`` agents."""
        return () if self.roles[agent] == "relay" else (self.vocab_size,) * self.message_length

    def sample_private(self, rng: np.random.Generator, size: int) -> list[np.ndarray]:
        """Uniform private numbers."""
        return [rng.integers(self.vocab_size, size=(size, len(self.private_nvec(agent))))
                for agent in range(self.n_agents)]

    def targets(self, private: Sequence[np.ndarray]) -> np.ndarray:
        """The running total after each agent: ``(size, n, length)``."""
        total = np.zeros((private[0].shape[0], self.message_length), dtype=np.int64)
        totals = []
        for role, numbers in zip(self.roles, private, strict=True):
            total = _OPS[role](total, numbers, self.vocab_size)
            totals.append(total)
        return np.stack(totals, axis=1)

    def describe_private(self, agent: int, private: np.ndarray) -> str:
        """``add c`` style: the role and its number."""
        role = self.roles[agent]
        return role if role == "relay" else f"{role} {self.symbols(private)}"

class raw_env(SharedContextEnv):
    """The compositional team as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "compositional_v0"}
    task_type = CompositionalTask


def env(**kwargs: Any) -> AECEnv:
    """The compositional team as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """The compositional team in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
