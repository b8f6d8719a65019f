"""The model client of an AgentWorld env, over its life.

A deep copy of an env shares the backend its settings built; closing the copy closed that
backend under the original too (whose next step faulted on it). Now the last of the two to
close closes it. An env never closed kept its client (and the backend, an ``hf`` model) alive
for good, with the worker thread that held it: 20 such envs left 20 threads and 20 backends.
"""

from __future__ import annotations

import copy
import gc
import threading
import warnings
import weakref

import gymnasium as gym
import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import registry
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.registration import env_id

SCENARIO = {"scenario": "search-lighthouse-keeper"}
SEARCH = '{"name": "web_search", "arguments": {"queries": ["Corran Point lighthouse"]}}'
BLOCKING = {"name": "scripted", "rules": [{"match": "no action says this", "reply": "",
                                          "delay_s": 0.01}]}
"""A backend built from settings whose calls run in the client's worker thread (it may block)."""
HANG_GUARD_S = 600


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedBackend]:
    """The backends of ``backend="lifecycle-counted"`` that were closed."""
    seen: list[ScriptedBackend] = []

    class Counted(ScriptedBackend):
        def close(self) -> None:
            seen.append(self)

    monkeypatch.setitem(registry._REGISTRY, "lifecycle-counted", Counted)
    return seen


def _make(vector: bool, **settings) -> gym.Env | gym.vector.VectorEnv:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scripted placeholder's warning
        if vector:
            return gym.make_vec(env_id("search"), num_envs=2, **settings)
        return gym.make(env_id("search"), **settings)


@pytest.mark.parametrize("vector", [False, True], ids=["env", "vector"])
def test_closing_a_deep_copy_leaves_the_originals_backend_open(
        closed: list[ScriptedBackend], vector: bool) -> None:
    env = _make(vector, backend="lifecycle-counted")
    env.reset(seed=0, options=SCENARIO)
    clone = copy.deepcopy(env)
    clone.close()
    clone.close()  # a second close releases nothing more
    assert closed == []
    info = env.step([SEARCH, SEARCH] if vector else SEARCH)[-1]
    assert np.all(info["world_model"]["ok"]), info["world_model"]
    env.close()
    env.close()
    assert len(closed) == 1  # once, by the last holder


def test_an_env_never_closed_leaves_no_thread_nor_backend_behind() -> None:
    before = set(threading.enumerate())
    clients, backends = [], []
    for seed in range(20):
        env = _make(False, backend=BLOCKING, timeout_s=600.0)
        env.reset(seed=seed, options=SCENARIO)
        env.step(SEARCH)  # the call runs in the client's worker thread
        client = env.unwrapped.sim.world_model
        clients.append(weakref.ref(client))
        backends.append(weakref.ref(client.backend))
        del env, client
    gc.collect()
    assert sum(ref() is not None for ref in clients) == 0
    assert sum(ref() is not None for ref in backends) == 0
    grown = [t for t in threading.enumerate() if t not in before]
    for thread in grown:
        thread.join(HANG_GUARD_S)
    assert [t.name for t in grown if t.is_alive()] == []
