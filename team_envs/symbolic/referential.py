"""The referential team (``team_envs/referential-v0``) in PettingZoo's AEC and Parallel forms.

The rules and keyword arguments are :class:`ReferentialTask`'s, below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, check_int, wrap
from team_envs.symbolic.tasks import SYMBOLS, SymbolicTask

__all__ = ["ReferentialTask", "env", "raw_env", "parallel_env"]


class ReferentialTask(SymbolicTask):
    """A referential chain: the last agent must pick, among candidates, the object ``agent_0`` saw.

    Objects have ``attributes`` attributes with ``values`` values each. ``agent_0`` (speaker) sees
    the target; the last agent (listener) sees ``candidates`` distinct objects in random order,
    one of them the target, and answers with the symbol of the target's position (``a`` for 0).

    Args:
        attributes: Attributes per object.
        values: Values per attribute.
        candidates: Objects the listener chooses from (at most ``vocab_size``).
        message_length: Symbols per message (2 by default, enough for 9 objects with 4 symbols).
        **kwargs: See :class:`SymbolicTask`.
    """

    family = "referential"

    def __init__(self, attributes: int = 2, values: int = 3, candidates: int = 3,
                 message_length: int = 2, **kwargs: Any) -> None:
        super().__init__(message_length=message_length, **kwargs)
        self.attributes = check_int("attributes", attributes, 1, 4)
        self.values = check_int("values", values, 2, 10)
        self.candidates = check_int("candidates", candidates, 2, self.vocab_size)
        if self.candidates > self.values ** self.attributes:
            raise ValueError(f"candidates={candidates} exceeds the {self.values ** attributes} "
                             "distinct objects")
        self._powers = self.values ** np.arange(self.attributes - 1, -1, -1)

    def _roles(self, n_agents: int) -> tuple[str, ...]:
        return ("speaker",) + ("relay",) * (n_agents - 2) + ("listener",)

    def private_nvec(self, agent: int) -> tuple[int, ...]:
        """The speaker's target and the listener's candidates, attribute by attribute."""
        if agent == 0:
            return (self.values,) * self.attributes
        if agent == self.n_agents - 1:
            return (self.values,) * (self.attributes * self.candidates)
        return ()

    def _digits(self, objects: np.ndarray) -> np.ndarray:
        return (objects[..., None] // self._powers) % self.values

    def sample_private(self, rng: np.random.Generator, size: int) -> list[np.ndarray]:
        """Distinct candidates in random order and a uniformly chosen target among them."""
        n_objects = self.values ** self.attributes
        objects = rng.random((size, n_objects)).argsort(axis=1)[:, :self.candidates]
        position = rng.integers(self.candidates, size=size)
        digits = self._digits(objects)
        empty = [np.zeros((size, 0), dtype=np.int64)] * (self.n_agents - 2)
        return [digits[np.arange(size), position], *empty, digits.reshape(size, -1)]

    def target_position(self, private: Sequence[np.ndarray]) -> np.ndarray:
        """Where the target sits among each episode's candidates."""
        candidates = private[-1].reshape(-1, self.candidates, self.attributes)
        return (candidates == private[0][:, None, :]).all(axis=2).argmax(axis=1)

    def score(self, private: Sequence[np.ndarray], messages: np.ndarray) -> np.ndarray:
        """1 when the listener's first symbol is the target's position."""
        return (messages[:, -1, 0] == self.target_position(private)).astype(np.float64)

    def describe_private(self, agent: int, private: np.ndarray) -> str:
        """``target: 12`` for the speaker, ``candidates: a=12 b=20 c=01`` for the listener."""
        if not private.size:
            return "-"
        objects = ["".join(map(str, obj)) for obj in private.reshape(-1, self.attributes).tolist()]
        if agent == 0:
            return f"target: {objects[0]}"
        return "candidates: " + " ".join(f"{SYMBOLS[k]}={obj}" for k, obj in enumerate(objects))

class raw_env(SharedContextEnv):
    """The referential team as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "referential_v0"}
    task_type = ReferentialTask


def env(**kwargs: Any) -> AECEnv:
    """The referential team as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """The referential team in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
