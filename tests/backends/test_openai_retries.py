"""What the OpenAI backend retries and how long it waits: the statuses worth another try, a
capped backoff, a call's time shared by its attempts, and a base URL checked before any."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, Completion, openai_compat
from agentworld_envs.backends.openai_compat import OpenAIBackend, OpenAIRequestError
from agentworld_envs.sim.model_client import ModelClient
from tests.helpers.examples import HANG_GUARD_S
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response


def ask() -> ChatRequest:
    return ChatRequest([{"role": "user", "content": "hi"}])


def once(status: int):
    """A responder that answers ``status`` first, then a completion."""
    def reply(hit: int, _body: dict[str, Any]) -> Reply:
        return Reply(status, {"error": "not now"}) if hit == 1 else Reply(200, chat_response("ok"))
    return reply


@pytest.mark.parametrize("status", [408, 425])
def test_a_timeout_or_too_early_reply_is_retried(status: int) -> None:
    with FakeOpenAIServer(once(status)) as server:
        backend = OpenAIBackend("m", server.base_url, api_key_env=None, backoff_s=0.001)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, Completion) and outcome.text == "ok" and server.hits == 2


@pytest.mark.parametrize("status", [501, 505])
def test_a_server_that_cannot_serve_the_request_is_not_retried(status: int) -> None:
    with FakeOpenAIServer(once(status)) as server:
        backend = OpenAIBackend("m", server.base_url, api_key_env=None, backoff_s=0.001)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError) and outcome.status == status
    assert "not retried" in str(outcome) and server.hits == 1


def test_the_backoff_doubles_up_to_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, *args: Any, **kwargs: Any) -> Any:
        waits.append(delay)
        return await real_sleep(0, *args, **kwargs)  # the waits are counted, not waited

    monkeypatch.setattr(openai_compat.asyncio, "sleep", recorded)
    with FakeOpenAIServer(lambda hit, body: Reply(503, "busy")) as server:
        backend = OpenAIBackend("m", server.base_url, api_key_env=None, max_retries=9)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError) and outcome.attempts == 10
    backoffs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]  # each wait drawn in [b/2, b]
    assert len(waits) == len(backoffs)
    assert all(b / 2 <= w <= b for w, b in zip(waits, backoffs, strict=True))


def test_a_stalled_first_attempt_is_retried_within_the_calls_time() -> None:
    """The env's ``timeout_s`` bounds the whole call: each of the openai backend's attempts
    gets a share, so the server's one stalled request costs an attempt, not the call."""
    release = threading.Event()

    def stall_first(hit: int, _body: dict[str, Any]) -> Reply:
        if hit == 1:
            release.wait(HANG_GUARD_S)  # until the test ends
        return Reply(200, chat_response("ok"))

    with FakeOpenAIServer(stall_first) as server:
        try:
            client = ModelClient({"name": "openai", "model": "m", "base_url": server.base_url,
                                  "api_key_env": None, "backoff_s": 0.01}, timeout_s=40.0)
            (outcome,) = client.complete([ask()])
            client.close()
        finally:
            release.set()
    # 40 s for the default 3 retries and the first try: the stalled attempt costs 10 s, and a
    # loaded machine has 10 s to answer the next
    assert client.backend.timeout_s == 10.0
    assert isinstance(outcome, Completion) and outcome.text == "ok", outcome
    assert server.hits == 2


def test_a_config_that_sets_the_attempts_time_keeps_it() -> None:
    config = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
              "max_retries": 1}
    assert ModelClient(config, timeout_s=60.0).backend.timeout_s == 30.0
    assert ModelClient({**config, "timeout_s": 5.0}, timeout_s=60.0).backend.timeout_s == 5.0
    assert ModelClient(config).backend.timeout_s == 120.0  # no call limit: the backend's own


@pytest.mark.parametrize("url", ["localhost:8000/v1", "127.0.0.1:8000/v1", "ftp://h/v1",
                                 "http:///v1", "http://[::1/v1", "//h/v1"])
def test_a_base_url_without_http_or_a_host_is_refused_at_once(url: str) -> None:
    with pytest.raises(ValueError, match="base_url must be an http:// or https:// URL"):
        OpenAIBackend("m", ["http://127.0.0.1:9/v1", url])


def test_a_refused_base_url_keeps_its_credentials_out_of_the_message() -> None:
    with pytest.raises(ValueError) as info:
        OpenAIBackend("m", "ftp://alice:hunter2-pw@h/v1")
    assert "hunter2-pw" not in str(info.value) and "ftp://***@h/v1" in str(info.value)
