"""An exception inside one AsyncVectorEnv worker reaches the user as itself; close() then works.

Gymnasium's worker sends the exception back as ``(type, instance)`` and the parent re-raises
``type(instance)``: an exception class whose constructor needs more than the message would come
back as a ``TypeError`` instead, and ``close()`` would then fail with ``EOFError``. So every
exception our envs can raise from ``step`` must be constructible from its message alone; these
tests hold our env and our exception types to that. (After a worker error gymnasium itself
leaves the vector env unusable: a further ``step`` fails with ``AttributeError: 'NoneType'
object has no attribute 'send'``; only ``close()`` is supported then.)
"""

from __future__ import annotations

import re
import warnings

import gymnasium
import pytest

import floor_tasks  # noqa: F401 - registers AgentFloor/<ID>-v0
from agentworld_envs.backends import BackendError
from floor_tasks.env import FloorEnv
from team_envs.core import ResetNeeded

ENV_ID = "AgentFloorTest/ChokingA1-v0"

FAULTS: dict[str, Exception] = {
    "raise RuntimeError": RuntimeError("env choked on the answer"),
    "raise BackendError": BackendError("server at http://127.0.0.1:9/v1 returned HTTP 503"),
    "raise team ResetNeeded": ResetNeeded("reset() needs to be called before step()"),
    "raise gymnasium ResetNeeded": gymnasium.error.ResetNeeded("call reset() before step()"),
}


class ChokingFloorEnv(FloorEnv):
    """AgentFloor task A1, except that an action naming one of :data:`FAULTS` raises it."""

    def step(self, action: str) -> tuple:
        if action in FAULTS:
            raise FAULTS[action]
        return super().step(action)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=ChokingFloorEnv, kwargs={"task_id": "A1"},
                       max_episode_steps=8)


def _async_vec() -> gymnasium.vector.VectorEnv:
    # shared_memory=False: a str cannot be a view of gymnasium's shared buffer (see below).
    return gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async",
                              vector_kwargs={"shared_memory": False})


@pytest.mark.parametrize("action", FAULTS)
def test_the_worker_error_reaches_the_user_and_close_works(action: str) -> None:
    fault = FAULTS[action]
    envs = _async_vec()
    try:
        observations, _ = envs.reset(seed=0)
        assert all(isinstance(o, str) and o for o in observations)
        with warnings.catch_warnings(record=True) as logged, \
                pytest.raises(type(fault), match=re.escape(str(fault))):
            warnings.simplefilter("always")
            envs.step((action, "I do not know."))
        assert any("error from Worker-0" in str(w.message) for w in logged)
    finally:
        envs.close()
    assert envs.closed


def test_a_healthy_async_vector_env_matches_the_sync_one() -> None:
    sync = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    envs = _async_vec()
    try:
        assert envs.reset(seed=3)[0] == sync.reset(seed=3)[0]
        actions = ('{"name": "lookup_record", "arguments": {"record_id": "P104"}}', "no idea")
        stepped, expected = envs.step(actions), sync.step(actions)
        assert stepped[0] == expected[0]
        assert (stepped[1] == expected[1]).all() and (stepped[2] == expected[2]).all()
    finally:
        envs.close()
        sync.close()


@pytest.mark.parametrize("fault", list(FAULTS.values()), ids=list(FAULTS))
def test_our_step_exceptions_survive_gymnasiums_reraise(fault: Exception) -> None:
    rebuilt = type(fault)(fault)  # what AsyncVectorEnv._raise_if_errors does
    assert type(rebuilt) is type(fault) and str(rebuilt) == str(fault)


def test_shared_memory_is_refused_with_the_way_out_not_silently_stale() -> None:
    """Gymnasium reads a shared text buffer once: UnicodeText refuses it instead of going stale."""
    with pytest.raises(ValueError, match="shared_memory=False") as raised:
        gymnasium.make_vec("AgentFloor/A1-v0", num_envs=2, vectorization_mode="async")
    assert "vector_kwargs={'shared_memory': False}" in str(raised.value.__cause__)
