"""RayVectorEnv: an actor that cannot make its vector env says why in one line."""

from __future__ import annotations

import pytest

from agentworld_envs.distributed import RayVectorEnv
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


@pytest.mark.parametrize(("env_id", "kwargs", "cause"), [
    ("AgentFloor/A1-v0", {"bogus": 1}, "TypeError: FloorEnv.__init__() got an unexpected"),
    ("no_such_module_x:AgentFloor/A1-v0", {}, "ModuleNotFoundError: No module named"),
], ids=["bad-kwarg", "missing-module"])  # an unknown id of ours is refused before Ray starts
# (tests/distributed/test_ray_vector_bad_settings.py)
def test_an_env_the_actors_cannot_make_raises_one_line_naming_the_cause(
        env_id: str, kwargs: dict, cause: str) -> None:
    with pytest.raises(RuntimeError) as raised:
        RayVectorEnv(env_id, 2, num_actors=1, **kwargs)
    message = str(raised.value)
    assert message.startswith(f"actor 0 could not make {env_id!r}: ")
    assert cause in message and "\n" not in message and "\x1b" not in message
