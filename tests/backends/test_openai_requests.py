"""The OpenAI-compatible backend against loopback servers: what it sends means what the
request asks on vLLM and SGLang too, and each fault says what failed and how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.backends import BackendError, ChatRequest
from agentworld_envs.backends.openai_compat import probe_tool_support
from agentworld_envs.protocol.chat import SamplingParams
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, fake_backend

KEY = "sk-review-0123456789"


def ask(sampling: SamplingParams | None = None) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": "hi"}], sampling=sampling or SamplingParams())


def like_vllm(hit: int, body: dict[str, Any]) -> Reply:
    """vLLM before 0.8 and SGLang check top_k so (and refuse 0 as this message says)."""
    top_k = body.get("top_k", -1)
    if top_k < -1 or top_k == 0:
        return Reply(400, {"object": "error", "type": "BadRequestError", "code": 400,
                           "message": f"top_k must be -1 (disable), or at least 1, got {top_k}."})
    return Reply(200, chat_response("ok"))


def test_top_k_zero_asks_a_vllm_or_sglang_server_for_every_token() -> None:
    with FakeOpenAIServer(like_vllm) as server, fake_backend(server.base_url) as backend:
        (completion,) = backend.complete([ask(SamplingParams(temperature=0.7, top_k=0))])
        backend.complete([ask(SamplingParams(temperature=0.7, top_k=20))])
    assert completion.text == "ok"
    assert [body["top_k"] for body in server.bodies] == [-1, 20]


def test_a_connection_error_says_its_cause() -> None:
    """A TLS failure, a refused connection and an unknown host must not all read alike."""
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response("ok"))) as server:
        url = server.base_url.replace("http://", "https://")
        with fake_backend(url) as backend, pytest.raises(BackendError) as info:
            backend.complete([ask()])
    assert "connection error (ConnectError: " in str(info.value)
    assert "SSL" in str(info.value)


@pytest.mark.parametrize("key", [f"{KEY}\n", f"{KEY}\r", f" {KEY}", f"{KEY}\x7f"])
def test_a_key_no_header_can_carry_fails_at_once_naming_its_variable(
        monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setenv("AGENTWORLD_REVIEW_KEY", key)
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response("ok"))) as server:
        with fake_backend(server.base_url, api_key_env="AGENTWORLD_REVIEW_KEY",
                         max_retries=3) as backend:
            outcomes = backend.complete_each([ask(), ask()])
    assert server.hits == 0
    assert all(isinstance(o, BackendError) for o in outcomes)
    message = str(outcomes[0])
    assert "$AGENTWORLD_REVIEW_KEY" in message and "connection error" not in message
    assert KEY not in message and KEY not in repr(outcomes[0])


def test_a_refused_key_says_which_variable_it_is_read_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_REVIEW_KEY", raising=False)
    refuse = Reply(401, {"error": {"message": "Incorrect API key provided"}})
    with FakeOpenAIServer(lambda hit, body: refuse) as server:
        with fake_backend(server.base_url, api_key_env="AGENTWORLD_REVIEW_KEY") as backend, \
                pytest.raises(BackendError, match="HTTP 401") as info:
            backend.complete([ask()])
        monkeypatch.setenv("AGENTWORLD_REVIEW_KEY", KEY)
        with fake_backend(server.base_url, api_key_env="AGENTWORLD_REVIEW_KEY") as backend, \
                pytest.raises(BackendError, match="HTTP 401") as set_info:
            backend.complete([ask()])
    assert "$AGENTWORLD_REVIEW_KEY, which is not set" in str(info.value)
    assert "$AGENTWORLD_REVIEW_KEY, which is set" in str(set_info.value)
    assert KEY not in str(set_info.value)


def test_a_404_says_what_base_url_and_model_must_be() -> None:
    missing = Reply(404, {"detail": "Not Found"})
    with FakeOpenAIServer(lambda hit, body: missing) as server:
        with fake_backend(server.base_url) as backend, \
                pytest.raises(BackendError, match="HTTP 404") as info:
            backend.complete([ask()])
    assert "base_url must be the server's API root" in str(info.value)
    assert "'fake'" in str(info.value) and server.hits == 1


def test_the_tool_probe_reads_the_servers_reply_not_its_url() -> None:
    """A server at .../toolbox/v1 that refuses the model is a fault, not "no tools"."""
    unknown = Reply(400, {"error": {"message": "The model `fake` does not exist."}})
    with FakeOpenAIServer(lambda hit, body: unknown) as server:
        url = server.base_url.replace("/v1", "/toolbox/v1")
        with fake_backend(url) as backend, pytest.raises(BackendError, match="does not exist"):
            probe_tool_support(backend)


def test_a_key_given_as_the_urls_user_name_is_never_shown() -> None:
    """``https://KEY@host/v1`` sends the key as the Basic user name: a server echoing it is
    masked, as it is for a password."""
    def echo(hit: int, body: dict[str, Any]) -> Reply:
        return (Reply(401, {"error": f"unknown key {KEY}"}) if hit == 1
                else Reply(200, chat_response(f"your key is {KEY}")))

    with FakeOpenAIServer(echo) as server:
        url = server.base_url.replace("http://", f"http://{KEY}@")
        with fake_backend(url) as backend:
            refused, answered = (backend.complete_each([ask()])[0],
                                 backend.complete_each([ask()])[0])
    assert server.headers[0]["authorization"].startswith("Basic ")
    assert isinstance(refused, BackendError) and "HTTP 401" in str(refused)
    assert KEY not in str(refused) and KEY not in refused.reply
    assert not isinstance(answered, BackendError) and KEY not in answered.text
    assert KEY not in repr(answered.raw)
