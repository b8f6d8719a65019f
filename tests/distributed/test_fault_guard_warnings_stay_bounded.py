"""``FaultGuard`` warns of every sub-env fault and keeps none of the warnings.

Its ``warnings.warn`` quoted the fault, whose text is new at nearly every fault (a request id,
the running count of a world model's failed calls), so Python's default filter kept each in the
caller's module's ``__warningregistry__`` for good: a Ray actor whose sub-envs failed now and
then grew by one entry per fault (401 after 400 faults).
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym

from agentworld_envs.distributed.fault_guard import FaultGuard
from tests.helpers.warnings_registry import registered_warnings


class Failing(gym.Env[str, str]):
    """An env whose every step raises an error quoting the step's own request id."""

    observation_space = action_space = gym.spaces.Text(64)

    def __init__(self) -> None:
        self.steps = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        return "start", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        raise RuntimeError(f"HTTP 500 (request id req_{self.steps:x}z)")


def test_faulted_steps_each_warn_and_leave_every_registry_as_it_was() -> None:
    envs = gym.vector.SyncVectorEnv([lambda: FaultGuard(Failing())] * 2)
    envs.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per message and place
        envs.step(["a", "b"])  # a filter change empties a registry at its next warning
        kept = registered_warnings()
        for _ in range(50):
            envs.step(["a", "b"])
        after_n = registered_warnings()
        for _ in range(50):
            envs.step(["a", "b"])
        assert registered_warnings() == after_n == kept
    faults = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(faults) == sum(env.unwrapped.steps for env in envs.envs) > 100
    assert str(faults[-1].message).startswith(
        "a sub-env's step raised RuntimeError: HTTP 500 (request id req_")
    envs.close()
