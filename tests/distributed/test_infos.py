"""RayVectorEnv infos equal SyncVectorEnv's when a key's values differ in type within an actor.

Gymnasium types each info key from the first sub-env that holds it; an actor must not type it
from the first of its own sub-envs (which raised where one process does not).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


class MixedTypes(gym.Env):
    """Sub-env k's (``seed % 4``) infos: ``x`` a string in 0 and 3 but an int in 2 (so actor 1
    of 2 sees an int first), ``y`` a float32 or an int, ``arr`` an array, nested ``n``."""

    observation_space = spaces.Discrete(4)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.k, self.turn = (seed or 0) % 4, 0
        return self.k, self._info()

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return self.k, 1.0, self.turn >= 2, False, self._info()

    def _info(self) -> dict[str, Any]:
        t = self.turn
        return [{"x": "a", "y": np.float32(t + 0.5), "n": {"z": None}},
                {"arr": np.arange(3) + t},
                {"x": t, "y": 2, "n": {"z": t}},
                {"x": "b", "arr": np.ones(3, np.int64), "n": {"z": "c"}}][self.k]


if "ReviewProbe/MixedTypes-v0" not in gym.registry:
    gym.register("ReviewProbe/MixedTypes-v0", entry_point=MixedTypes)
MIXED = "tests.distributed.test_infos:ReviewProbe/MixedTypes-v0"


def assert_same(got: Any, expected: Any, where: str = "info") -> None:
    """Equal vector infos: keys, masks, dtypes, values and each object entry's type."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_same(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, np.ndarray) and expected.dtype.kind != "O":
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), where
        assert np.array_equal(got, expected), where
    elif isinstance(expected, np.ndarray):
        assert got.dtype.kind == "O" and got.shape == expected.shape, where
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(got) is type(expected) and got == expected, where


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_infos_of_mixed_types_within_an_actor_equal_sync_vector_envs(
        mode: AutoresetMode) -> None:
    kwargs = {"vector_kwargs": {"autoreset_mode": mode}}
    envs = RayVectorEnv(MIXED, 4, num_actors=2, **kwargs)
    expected_env = gym.make_vec(MIXED.partition(":")[2], num_envs=4, vectorization_mode="sync",
                                **kwargs)
    try:
        got, expected = envs.reset(seed=0)[1], expected_env.reset(seed=0)[1]
        assert expected["x"].tolist() == ["a", None, 0, "b"]
        assert_same({k: v for k, v in got.items() if k not in ("group", "_group")}, expected)
        for _ in range(3):  # an episode's end, and its autoreset
            *got_step, got = envs.step([0] * 4)
            *expected_step, expected = expected_env.step([0] * 4)
            for a, b in zip(got_step, expected_step, strict=True):
                assert_same(a, b, "step")
            assert_same({k: v for k, v in got.items() if k not in ("group", "_group")},
                        expected)
    finally:
        envs.close()
        expected_env.close()
