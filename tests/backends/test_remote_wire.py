"""The ``openai`` backend against scripted faulty servers on loopback: the concurrency limit
holds across threads, a success cut short is retried, bytes that are not UTF-8 cost one
character, a wait past the call's time is not waited, and no log line carries a credential."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
import time
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.backends.openai_compat import OpenAIRequestError
from agentworld_envs.backends.replies import REPAIRS_KEY
from agentworld_envs.sim.model_client import ModelClient
from tests.helpers.examples import HANG_GUARD_S
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, fake_backend

PASSWORD = "hunter2-pw"


def ask(text: str = "hi") -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}])


def test_the_concurrency_limit_holds_across_threads_and_a_cancelled_batch_frees_its_slots(
) -> None:
    stall = threading.Event()

    def responder(hit: int, body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] == "stall":
            stall.wait(HANG_GUARD_S)
            return Reply(body=chat_response("late"))
        return Reply(body=chat_response("ok"), delay_s=0.1)

    with FakeOpenAIServer(responder) as server:
        backend = fake_backend(server.base_url, concurrency=2)
        # A batch cancelled while one request is in flight and two wait for a slot.
        cancelled: list[BaseException] = []

        def stalled() -> None:
            try:
                backend.complete_each([ask("stall"), ask("stall"), ask("stall")])
            except asyncio.CancelledError as exc:
                cancelled.append(exc)

        first = threading.Thread(target=stalled)
        first.start()
        deadline = time.monotonic() + HANG_GUARD_S
        while server.hits < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        backend.cancel()
        first.join()
        stall.set()
        while server._in_flight and time.monotonic() < deadline:  # the stalled replies end
            time.sleep(0.01)
        assert cancelled and server.hits == 2  # the third never got a slot

        answers: list[list[Any]] = []
        threads = [threading.Thread(target=lambda: answers.append(backend.complete_each(
            [ask(f"q{i}") for i in range(4)]))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert [isinstance(a, Completion) for batch in answers for a in batch] == [True] * 16
    assert server.max_in_flight == 2  # was 8: each thread's batch had a limit of its own


def test_a_success_cut_short_is_retried() -> None:
    whole = json.dumps(chat_response("fine"))

    def responder(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(body=whole[: len(whole) // 2] if hit == 1 else whole)

    with FakeOpenAIServer(responder) as server:
        (outcome,) = fake_backend(server.base_url, max_retries=1).complete_each([ask()])
    assert isinstance(outcome, Completion) and outcome.text == "fine"
    assert server.hits == 2


def test_a_success_that_stays_broken_fails_after_its_retries_saying_so() -> None:
    with FakeOpenAIServer(lambda hit, body: Reply(body="<html>index</html>")) as server:
        (outcome,) = fake_backend(server.base_url, max_retries=1).complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError)
    assert "after 2 attempt(s): HTTP 200 without a JSON object: <html>" in str(outcome)


def test_bytes_that_are_not_utf8_cost_their_characters_not_the_answer() -> None:
    body = json.dumps(chat_response("caf\u00e9 \ufffd XY")).encode().replace(b"XY", b"\xff")
    with FakeOpenAIServer(lambda hit, req: Reply(body=body)) as server:
        (outcome,) = fake_backend(server.base_url).complete_each([ask()])
    assert isinstance(outcome, Completion)
    assert outcome.text == "caf\u00e9 \ufffd \ufffd"
    assert outcome.raw[REPAIRS_KEY] == [
        "replaced 1 byte sequence(s) that are not UTF-8 with U+FFFD"]


def test_a_retry_after_past_the_calls_time_fails_at_once_with_its_cause() -> None:
    def rate_limited(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(429, {"error": "rate limited"}, headers={"Retry-After": "300"})

    with FakeOpenAIServer(rate_limited) as server:
        client = ModelClient({"name": "openai", "model": "fake", "base_url": server.base_url,
                              "api_key_env": None, "max_retries": 1}, timeout_s=20.0)
        try:
            (fault,) = client.complete([ask()])
        finally:
            client.close()
    assert fault.kind == "backend_error"  # was "timeout", the 429 lost
    assert "HTTP 429" in fault.message and "would outlast the call's 20 s" in fault.message
    assert server.hits == 1


def test_no_log_line_carries_the_urls_credentials(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    with FakeOpenAIServer(lambda hit, req: Reply(body=chat_response("ok"))) as server:
        url = server.base_url.replace("://", f"://alice:{PASSWORD}@")
        (outcome,) = fake_backend(url).complete_each([ask()])
    assert isinstance(outcome, Completion)
    token = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert server.headers[0]["authorization"] == f"Basic {token}"
    assert "HTTP Request: POST http://127.0.0.1" in caplog.text  # httpx logged the request
    assert PASSWORD not in caplog.text and "alice" not in caplog.text


def test_a_streamed_reply_is_refused_before_anything_is_sent() -> None:
    """Its event stream failed every retry as "HTTP 200 without a JSON object"."""
    from agentworld_envs.protocol.chat import SamplingParams

    streamed = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                           sampling=SamplingParams(extra={"stream": True}))
    with FakeOpenAIServer(lambda hit, body: Reply(body="data: {}\n\n")) as server:
        (outcome,) = fake_backend(server.base_url, max_retries=2).complete_each([streamed])
    assert "streamed reply ('stream')" in str(outcome) and server.hits == 0
