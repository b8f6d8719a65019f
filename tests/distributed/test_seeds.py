"""RayVectorEnv.reset: a seed that is not an int, None or a list of them is refused by name,
before any actor is called, and the episodes go on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.layout import sub_env_seeds
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")

BAD_SEEDS = [3.7, "3", [0, 1.5], (None, "1")]


@pytest.mark.parametrize("seed", BAD_SEEDS)
def test_sub_env_seeds_refuse_what_is_not_an_int(seed: Any) -> None:
    with pytest.raises(TypeError, match=r"^seed must be an int, None or a list of 2 ints"):
        sub_env_seeds(seed, 2, 1, None)


def test_sub_env_seeds_take_numpy_ints_and_nones() -> None:
    assert sub_env_seeds(np.int64(4), 2, 1, None) == [4, 5]
    assert sub_env_seeds([np.int32(1), None], 2, 1, None) == [1, None]


@pytest.mark.usefixtures("ray_runtime")
def test_a_bad_seed_raises_and_the_episodes_go_on() -> None:
    envs = RayVectorEnv("AgentFloor/A1-v0", 2, num_actors=1)
    try:
        observations, _ = envs.reset(seed=0)
        for seed in BAD_SEEDS:
            with pytest.raises(TypeError, match="^seed must be an int"):
                envs.reset(seed=seed)
        assert envs.np_random_seed == 0
        *_, info = envs.step(["I do not know."] * 2)
        assert info["turn"].tolist() == [1, 1]  # the episodes of reset(seed=0) went on
    finally:
        envs.close()
