"""RayVectorEnv.reset that raises in one actor after another reset its sub-envs: their episodes
are lost, and the next step says so, as for a restarted actor's (never a silent swap)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = [pytest.mark.usefixtures("ray_runtime"),
              pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")]

BAD_LAST = {"scenario": [None, None, None, 12345]}
"""Per-sub-env scenarios that only actor 1 (sub-envs 2-3) refuses."""


def test_a_reset_that_raises_in_one_actor_reports_the_others_lost_episodes() -> None:
    expected = gym.make_vec("AgentWorld/MCP-v0", num_envs=4, backend="scripted")
    new_starts, _ = expected.reset(seed=7)
    expected.close()
    envs = RayVectorEnv("AgentWorld/MCP-v0", 4, num_actors=2, backend="scripted")
    try:
        first, _ = envs.reset(seed=0)
        with pytest.raises(ValueError, match=r"^actor 1 \(sub-envs 2-3\), reset\(\)"):
            envs.reset(seed=7, options=BAD_LAST)
        observations, rewards, terminated, truncated, info = envs.step(["hello"] * 4)
        assert truncated.tolist() == [True, True, False, False]
        assert info["_fault"].tolist() == [True, True, False, False]
        assert info["fault"][0].startswith("reset() reset this sub-env, then raised: actor 1")
        assert list(info["final_obs"][:2]) == list(first[:2])  # the episodes the caller saw
        assert list(observations[:2]) == list(new_starts[:2])  # those reset(seed=7) began
        assert rewards[:2].tolist() == [0.0, 0.0]
    finally:
        envs.close()
