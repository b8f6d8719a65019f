"""RayVectorEnv reset options on sub-envs vectorised by Gymnasium: each sub-env gets every
option whole, as in SyncVectorEnv (not its actor's slice of a list of ``num_envs`` entries)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium import spaces

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


class EchoOptions(gym.Env):
    """Its reset info says which ``tag`` option it got."""

    observation_space = spaces.Discrete(2)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {"tag": repr((options or {}).get("tag"))}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, False, False, {}


if "ReviewProbe/EchoOptions-v0" not in gym.registry:
    gym.register("ReviewProbe/EchoOptions-v0", entry_point=EchoOptions)
ECHO = "tests.distributed.test_options:ReviewProbe/EchoOptions-v0"


@pytest.mark.parametrize("tag", [["a", "b", "c", "d"], ("a", "b", "c", "d"), "a"])
def test_list_options_reach_each_sub_env_whole_as_in_sync_vector_env(tag: Any) -> None:
    envs = RayVectorEnv(ECHO, 4, num_actors=2)
    expected_env = gym.make_vec(ECHO.partition(":")[2], num_envs=4, vectorization_mode="sync")
    try:
        got = envs.reset(seed=0, options={"tag": tag})[1]["tag"].tolist()
        expected = expected_env.reset(seed=0, options={"tag": tag})[1]["tag"].tolist()
        assert got == expected == [repr(tag)] * 4
    finally:
        envs.close()
        expected_env.close()
