"""RayVectorEnv.close() after ray.shutdown(): the env forgets its actors, and no new Ray runtime
starts (a module of its own: the test ends the module's runtime)."""

from __future__ import annotations

import pytest

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


def test_close_after_ray_shutdown_returns_without_starting_ray() -> None:
    envs = RayVectorEnv("AgentFloor/A1-v0", 2, num_actors=1)
    envs.reset(seed=0)
    ray.shutdown()
    envs.close()
    assert not ray.is_initialized() and envs.actors == []
