"""RayVectorEnv: a bad argument is refused by name before Ray is started (it was refused, if at
all, by every actor once Ray and the actors were up, or by a bare ``TypeError``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.layout import sub_env_seeds


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    def connect() -> None:
        raise AssertionError("Ray was started before the arguments were checked")

    monkeypatch.setattr("agentworld_envs.distributed.ray_vector_env.connect", connect)


@pytest.mark.usefixtures("no_ray")
@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"num_envs": None}, TypeError, "^num_envs must be an int, got None"),  # '<' not supported
    ({"group_size": None}, TypeError, "^group_size must be an int, got None"),
    ({"env_id": None}, TypeError, "^env_id must be a registered env id, got None"),
    ({"env_id": "AgentWorld/Termnal-v0"}, gym.error.NameNotFound, "Termnal"),
    ({"actor_options": "SPREAD"}, TypeError, "^actor_options must be a dict of Ray actor"),
    ({"ready_timeout_s": -1}, ValueError, "^ready_timeout_s must be a number of seconds > 0"),
    ({"ready_timeout_s": float("nan")}, ValueError, "^ready_timeout_s must be a number of"),
    ({"ready_timeout_s": "60"}, ValueError, "^ready_timeout_s must be a number of seconds"),
])
def test_a_bad_argument_is_refused_before_ray_is_started(
        kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    arguments = {"env_id": "AgentWorld/Terminal-v0", "num_envs": 2, **kwargs}
    with pytest.raises(error, match=message):
        RayVectorEnv(**arguments)


def test_numpy_int_seeds_in_a_list_come_out_as_python_ints() -> None:
    """The actors' envs refused them (Gymnasium seeds only Python ints), one numpy int aside."""
    seeds = sub_env_seeds([np.int64(1), None], 2, 1, None)
    assert seeds == [1, None] and type(seeds[0]) is int
