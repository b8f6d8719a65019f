"""RayVectorEnv: a count that is not an int is refused by name before Ray is started."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.layout import check_layout


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"num_envs": 4.0}, "num_envs"), ({"num_envs": "4"}, "num_envs"),
    ({"num_envs": True}, "num_envs"), ({"num_envs": 4, "group_size": 2.0}, "group_size"),
    ({"num_envs": 4, "num_actors": 1.5}, "num_actors"),
])
def test_a_count_that_is_not_an_int_raises_naming_it_before_ray_is_started(
        monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], name: str) -> None:
    def connect() -> None:
        raise AssertionError("Ray was started before the arguments were checked")

    monkeypatch.setattr("agentworld_envs.distributed.ray_vector_env.connect", connect)
    with pytest.raises(TypeError, match=f"^{name} must be an int, got "):
        RayVectorEnv("AgentFloor/A1-v0", kwargs.pop("num_envs"), **kwargs)


def test_numpy_ints_are_counts() -> None:
    assert check_layout(np.int64(6), np.int32(2), np.int64(3)) == 3
