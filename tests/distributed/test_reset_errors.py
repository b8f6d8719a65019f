"""RayVectorEnv.reset: an error a sub-env raises comes back by its type, in one line naming the
actor, as ``call`` raises one (and as one process raises it: one line)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import floor_tasks  # noqa: F401 - registers AgentFloor/<task>-v0
from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


def test_a_bad_reset_option_raises_its_error_in_one_line_naming_the_actor() -> None:
    expected_env = gym.make_vec("AgentFloor/A1-v0", num_envs=4, vectorization_mode="sync")
    with pytest.raises(ValueError) as expected:
        expected_env.reset(seed=0, options={"variant": "nope"})
    expected_env.close()
    envs = RayVectorEnv("AgentFloor/A1-v0", 4, num_actors=2)
    try:
        envs.reset(seed=0)
        with pytest.raises(ValueError) as raised:
            envs.reset(seed=1, options={"variant": "nope"})
        assert str(raised.value) == \
            f"actor 0 (sub-envs 0-1), reset(): ValueError: {expected.value}"
        *_, info = envs.step(["I do not know."] * 4)
        assert info["turn"].tolist() == [1] * 4  # the episodes of reset(seed=0) go on
    finally:
        envs.close()
