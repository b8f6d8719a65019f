"""A RayVectorEnv refuses ``copy.deepcopy`` and ``pickle`` in one line saying why; before, both
failed with ``TypeError: cannot pickle 'module' object``, naming none of it."""

from __future__ import annotations

import copy
import pickle

import pytest

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


def test_copying_or_pickling_a_ray_vector_env_says_why_it_cannot() -> None:
    envs = RayVectorEnv("AgentWorld/MCP-v0", 1, num_actors=1, backend="scripted")
    try:
        for copied in (copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="RayVectorEnv cannot be copied or pickled"):
                copied(envs)
        envs.reset(seed=0)  # still whole
    finally:
        envs.close()
