"""RayVectorEnv.close: an error a sub-env's ``close`` raises is raised, as ``SyncVectorEnv.close``
raises it, naming the actor, after every actor is killed (never dropped)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium import spaces

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import (  # noqa: F401 - ray_runtime: the module's Ray runtime
    assert_killed,
    ray_runtime,
)

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")

FAILING_CLOSE = "tests.distributed.test_close:RayProbe/FailingClose-v0"
"""For actors, which import this module to register it."""


class FailingClose(gym.Env):
    """Sub-env 1's ``close`` raises (say, a log it cannot flush)."""

    observation_space = spaces.Discrete(3)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.index = seed
        return 0, {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return 1, 0.0, False, False, {}

    def close(self) -> None:
        if self.index == 1:
            raise OSError("could not flush the run log")


if "RayProbe/FailingClose-v0" not in gym.registry:
    gym.register("RayProbe/FailingClose-v0", entry_point=FailingClose)


def test_a_sub_env_close_error_is_raised_naming_its_actor_and_no_actor_is_left() -> None:
    expected = gym.make_vec("RayProbe/FailingClose-v0", num_envs=2, vectorization_mode="sync")
    expected.reset(seed=0)
    with pytest.raises(OSError, match="could not flush the run log"):
        expected.close()
    envs = RayVectorEnv(FAILING_CLOSE, 2, num_actors=2)
    envs.reset(seed=0)
    actors = list(envs.actors)
    with pytest.raises(OSError, match=r"^actor 1 \(sub-envs 1-1\), close\(\): OSError: could "):
        envs.close()
    for actor in actors:  # killed all the same
        assert_killed(actor)
    envs.close()  # a second close returns
    assert envs.closed
