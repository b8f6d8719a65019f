"""Retry waits are jittered: the clients of one overloaded server (thousands of envs in Ray
actors) must not all come back at once. Waits are recorded, never timed: ``asyncio.sleep`` is
replaced by one that counts them."""

from __future__ import annotations

import asyncio
import pickle
import random
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, check_backend_config, openai_compat
from agentworld_envs.backends.openai_compat import OpenAIBackend, OpenAIRequestError
from agentworld_envs.backends.registry import BackendConfigError
from tests.helpers.server import FakeOpenAIServer, Reply

BUSY = Reply(503, {"error": "busy"})


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff waits of the test's backends, none of them waited."""
    recorded: list[float] = []
    real_sleep = asyncio.sleep

    async def counted(delay: float, *args: Any, **kwargs: Any) -> Any:
        if delay > 0:  # httpx's own zero-second yields are not backoff waits
            recorded.append(delay)
        return await real_sleep(0, *args, **kwargs)

    monkeypatch.setattr(openai_compat.asyncio, "sleep", counted)
    return recorded


def fail_all(backend: OpenAIBackend) -> OpenAIRequestError:
    (outcome,) = backend.complete_each([ChatRequest([{"role": "user", "content": "hi"}])])
    assert isinstance(outcome, OpenAIRequestError)
    return outcome


def busy_backend(url: str, **options: Any) -> OpenAIBackend:
    return OpenAIBackend("m", url, **{"api_key_env": None, "max_retries": 5, "timeout_s": 10.0,
                                      **options})


def test_each_wait_is_drawn_between_half_and_all_of_the_backoff(waits: list[float]) -> None:
    with FakeOpenAIServer(lambda hit, body: BUSY) as server:
        assert fail_all(busy_backend(server.base_url, jitter_seed=7)).attempts == 6
    draws = random.Random(7)
    backoffs = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert waits == [draws.uniform(b / 2, b) for b in backoffs]
    assert all(b / 2 <= w <= b for w, b in zip(waits, backoffs, strict=True))


def test_copies_of_a_backend_without_a_seed_never_wait_in_step(waits: list[float]) -> None:
    """Ray actors and env workers each get a pickled copy of the backend."""
    with FakeOpenAIServer(lambda hit, body: BUSY) as server:
        backend = busy_backend(server.base_url)
        schedules = []
        for copy in (backend, pickle.loads(pickle.dumps(backend)),
                     pickle.loads(pickle.dumps(backend))):
            waits.clear()
            fail_all(copy)
            schedules.append(tuple(waits))
    assert len(set(schedules)) == 3


def test_a_seed_repeats_the_waits_in_every_copy(waits: list[float]) -> None:
    with FakeOpenAIServer(lambda hit, body: BUSY) as server:
        backend = busy_backend(server.base_url, jitter_seed=3)
        copy = pickle.loads(pickle.dumps(backend))
        fail_all(copy)
        first = list(waits)
        waits.clear()
        fail_all(busy_backend(server.base_url, jitter_seed=3))
    assert waits == first and len(first) == 5
    assert backend.describe()["jitter_seed"] == 3


def test_a_retry_after_is_waited_in_full_then_jittered_within_its_cap(waits: list[float]) -> None:
    slow_down = Reply(429, {"error": "slow down"}, headers={"Retry-After": "2"})
    with FakeOpenAIServer(lambda hit, body: slow_down) as server:
        fail_all(busy_backend(server.base_url, jitter_seed=5, max_retries=3,
                              max_retry_after_s=4.0))
    draws = random.Random(5)
    # backoffs 1, 2, 4: up to half of each above the server's 2 s, never past the 4 s cap
    assert waits == [draws.uniform(2.0, top) for top in (2.5, 3.0, 4.0)]
    assert min(waits) >= 2.0 and max(waits) <= 4.0


@pytest.mark.parametrize(("setting", "message"), [
    ({"backoff_s": "1"}, "backoff_s must be a number >= 0, not '1'"),
    ({"backoff_s": float("nan")}, "backoff_s must be a number >= 0, not nan"),
    ({"replica_cooldown_s": -1}, "replica_cooldown_s must be a number >= 0, not -1"),
    ({"jitter_seed": "7"}, "jitter_seed must be an integer >= 0 or null, not '7'"),
])
def test_a_wait_setting_no_retry_can_use_fails_the_config_check(setting: dict[str, Any],
                                                                message: str) -> None:
    """A string backoff passed the check, then failed every retried request with a TypeError."""
    config = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", **setting}
    with pytest.raises(BackendConfigError) as info:
        check_backend_config(config)
    assert str(info.value) == f"backend 'openai': {message}"
