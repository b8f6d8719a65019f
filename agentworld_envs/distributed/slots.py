"""The sub-envs of one vector env (a :class:`~agentworld_envs.distributed.RayVectorEnv`, or any
Gymnasium vector env) as single envs, for code that holds one env per episode, such as TRL's env
sessions: each is reset alone (a masked reset) and all are stepped together.

Example:
    >>> import gymnasium as gym, floor_tasks
    >>> slots = VectorSlots(gym.make_vec("AgentFloor/A1-v0", num_envs=2))
    >>> a, b = slots.claim(), slots.claim()
    >>> _ = a.reset(seed=0, options={"variant": "v0"}), b.reset(seed=1)
    >>> slots.step_together({a.index: "I do not know.", b.index: "Nor do I."})  # one step
    >>> a.step("I do not know.")[2], b.step("Nor do I.")[2]  # its results
    (True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import iterate

from agentworld_envs.sim.vector_info import info_at

__all__ = ["FILLER", "SlotEnv", "VectorSlots"]

FILLER = ""
"""The action of the sub-envs a joint step leaves out (finished episodes, unused slots); their
results are dropped. It ends the episode at once (an empty final answer), but an autoreset env
starts a new one to end, so a judge configured on a simulated env may be called for it."""


class SlotEnv:
    """Sub-env :attr:`index` of a :class:`VectorSlots`, with a single env's ``reset``/``step``."""

    def __init__(self, slots: VectorSlots, index: int) -> None:
        self.slots, self.index = slots, index

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset this sub-env alone."""
        return self.slots.reset(self.index, seed, options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """This sub-env's result of the last :meth:`VectorSlots.step_together`, else of a joint
        step of its own."""
        return self.slots.step(self.index, action)

    def close(self) -> None:
        """Nothing: the vector env is its owner's to close."""


class VectorSlots:
    """Hands out the sub-envs of ``envs`` one by one (:meth:`claim`), in order."""

    def __init__(self, envs: VectorEnv) -> None:
        self.envs = envs
        self._claimed = 0
        self._results: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        """Sub-env index: the action it played in the last joint step and its result."""

    def claim(self) -> SlotEnv:
        """The next sub-env."""
        if self._claimed == self.envs.num_envs:
            raise ValueError(f"all {self.envs.num_envs} sub-envs of the vector env are taken: "
                             "make it with one sub-env per env session")
        self._claimed += 1
        return SlotEnv(self, self._claimed - 1)

    def _items(self, observations: Any) -> list[Any]:
        """The vector env's batch of observations as one observation per sub-env (any space:
        a ``Dict`` batch is a dict of batches)."""
        return list(iterate(self.envs.observation_space, observations))

    def _one_hot(self, index: int) -> np.ndarray:
        mask = np.zeros(self.envs.num_envs, dtype=np.bool_)
        mask[index] = True
        return mask

    def reset(self, index: int, seed: int | None,
              options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """Reset sub-env ``index`` alone, with ``seed`` and ``options``."""
        seeds: list[int | None] = [None] * self.envs.num_envs
        seeds[index] = seed
        observations, info = self.envs.reset(
            seed=seeds, options={**(options or {}), "reset_mask": self._one_hot(index)})
        self._results.pop(index, None)
        return self._items(observations)[index], info_at(info, index)

    def step_together(self, actions: Mapping[int, Any]) -> None:
        """One step of the vector env: sub-env i plays ``actions[i]``, the others
        :data:`FILLER`. Each result waits for its sub-env's :meth:`step`; an episode that ended
        gives its own last observation and info, whatever the autoreset mode."""
        observations, rewards, terminated, truncated, info = self.envs.step(
            [actions.get(i, FILLER) for i in range(self.envs.num_envs)])
        items = self._items(observations)
        for i, action in actions.items():
            own = info_at(info, i)
            observation = items[i]
            if "final_obs" in own:  # SAME_STEP: the new episode's are in the step's results
                observation, own = own["final_obs"], own["final_info"]
            self._results[i] = (action, (observation, float(rewards[i]), bool(terminated[i]),
                                         bool(truncated[i]), own))

    def step(self, index: int, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Sub-env ``index``'s result of the last joint step, which must have played
        ``action``; without one, a joint step of its own."""
        if index not in self._results:
            self.step_together({index: action})
        played, result = self._results.pop(index)
        if played != action:
            raise ValueError(f"sub-env {index} played {played!r} in the joint step, not "
                             f"{action!r}")
        return result
