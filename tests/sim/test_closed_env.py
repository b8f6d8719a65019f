"""A closed AgentWorld env refuses to go on: ``reset`` and ``step`` after ``close()``, and a step
that ``close()`` overtook in another thread, raise ``ClosedEnvironmentError`` (as ``RayVectorEnv``
and Gymnasium's ``AsyncVectorEnv`` do). Before, a closed env started a new worker thread and
played on a released backend: the ``hf`` backend's step came back as a fallback observation
faulted with ``AttributeError: 'NoneType' object has no attribute 'generation_config'``."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence

import gymnasium as gym
import pytest
from gymnasium.error import ClosedEnvironmentError

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.registration import env_id

SCENARIO = {"scenario": "search-lighthouse-keeper"}
SEARCH = '{"name": "web_search", "arguments": {"queries": ["Corran Point lighthouse"]}}'
HANG_GUARD_S = 600


def _quiet_make(make, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scripted placeholder's warning
        return make(*args, **kwargs)


def test_reset_and_step_after_close_raise_and_a_second_close_does_not() -> None:
    env = _quiet_make(gym.make, env_id("search"), backend="scripted")
    env.reset(seed=0, options=SCENARIO)
    env.close()
    env.close()
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        env.step(SEARCH)
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        env.reset(seed=1)


def test_the_vector_env_refuses_reset_and_step_after_close() -> None:
    envs = _quiet_make(gym.make_vec, env_id("search"), num_envs=2, backend="scripted")
    envs.reset(seed=0, options=SCENARIO)
    envs.close()
    envs.close()
    with pytest.raises(ClosedEnvironmentError):
        envs.step([SEARCH, SEARCH])
    with pytest.raises(ClosedEnvironmentError):
        envs.reset(seed=1)


class _Gate(Backend):
    """A model that answers once the test opens the gate, after the env was closed."""

    blocking = True

    def __init__(self) -> None:
        self.entered, self.gate = threading.Event(), threading.Event()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.entered.set()
        self.gate.wait(HANG_GUARD_S)
        return [Completion(text="<predicted_observation>late</predicted_observation>")
                for _ in requests]


def test_a_step_in_flight_when_the_env_is_closed_raises() -> None:
    backend = _Gate()
    env = gym.make(env_id("search"), backend=backend)
    env.reset(seed=0, options=SCENARIO)
    outcome: list[BaseException | tuple] = []

    def step() -> None:
        try:
            outcome.append(env.step(SEARCH))
        except BaseException as exc:  # noqa: BLE001 - checked below
            outcome.append(exc)

    stepping = threading.Thread(target=step)
    stepping.start()
    assert backend.entered.wait(HANG_GUARD_S)
    env.close()
    backend.gate.set()
    stepping.join(HANG_GUARD_S)
    assert len(outcome) == 1 and isinstance(outcome[0], ClosedEnvironmentError), outcome


def test_a_closed_hf_backend_says_so(tiny_lm_dir) -> None:
    from agentworld_envs.backends.hf import HFBackend

    backend = HFBackend(model=str(tiny_lm_dir))
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.complete([ChatRequest([{"role": "user", "content": "hi"}])])
