"""OpenAIBackend against a real ``transformers serve`` and against scripted fault servers."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agentworld_envs.backends import (
    BackendError,
    ChatRequest,
    Completion,
    SamplingParams,
    make_backend,
)
from agentworld_envs.backends.openai_compat import OpenAIBackend, probe_tool_support
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.protocol.tool_calls import ToolCall, parse_action
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, free_port

SECRET = "sk-test-5ecret-value-0123456789"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def backend_for(base_url: str | list[str], **kwargs: Any) -> OpenAIBackend:
    options: dict[str, Any] = {"api_key_env": None, "backoff_s": 0.01, "timeout_s": 5.0}
    options.update(kwargs)
    return OpenAIBackend(model="fake", base_url=base_url, **options)


def ask(text: str, **sampling: Any) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "user", "content": text}], sampling=SamplingParams(**sampling)
    )


def ok(_hit: int, _body: dict[str, Any]) -> Reply:
    return Reply(200, chat_response("fine"))


# --- the real server -------------------------------------------------------------------------


@pytest.mark.server
def test_batch_against_transformers_serve(tiny_server: tuple[str, str], tiny_lm_dir) -> None:
    from transformers import AutoTokenizer

    base_url, model = tiny_server
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    prompts = ["hi", "search the weather in the city for me please", "ok", "lookup order 42"]
    requests = [ask(p, max_tokens=6) for p in prompts]
    requests[1].tools = [WEATHER_TOOL]
    with OpenAIBackend(model=model, base_url=base_url, api_key_env=None, concurrency=4) as backend:
        batch = backend.complete(requests)
        alone = [backend.complete([r])[0] for r in requests]
    assert len(batch) == len(requests)
    for request, completion, single in zip(requests, batch, alone, strict=True):
        expected_prompt = tokenizer.apply_chat_template(
            request.messages, tools=request.tools, add_generation_prompt=True, tokenize=False
        )
        prompt_tokens = len(tokenizer(expected_prompt, add_special_tokens=False)["input_ids"])
        assert completion.usage.input_tokens == prompt_tokens
        assert 1 <= completion.usage.output_tokens <= 6
        assert completion.finish_reason in ("stop", "length", "tool_calls")
        assert completion.raw is not None and completion.raw["model"] == model
        assert completion.latency_s > 0
        # Greedy decoding: the batch answer is the answer to this very request.
        assert (completion.text, completion.usage) == (single.text, single.usage)


@pytest.mark.server
def test_transformers_serve_rejects_unknown_model_without_retrying(
    tiny_server: tuple[str, str],
) -> None:
    base_url, _model = tiny_server
    with backend_for(base_url) as backend:
        with pytest.raises(BackendError, match="400") as info:
            backend.complete([ask("hi", max_tokens=2)])
        assert info.value.attempts == 1  # not retried
        with pytest.raises(BackendError, match="400"):
            probe_tool_support(backend)


# --- payload and parsing ---------------------------------------------------------------------


def test_unset_top_p_and_top_k_are_left_to_the_server() -> None:
    """The release's evaluation sends neither, so the served model's generation config applies."""
    with FakeOpenAIServer(ok) as server, backend_for(server.base_url) as backend:
        backend.complete([ChatRequest([{"role": "user", "content": "hi"}],
                                      sampling=SamplingParams(temperature=0.6, top_p=None))])
    assert "top_p" not in server.bodies[0] and "top_k" not in server.bodies[0]
    assert server.bodies[0]["temperature"] == 0.6


def test_payload_carries_sampling_tools_and_extra() -> None:
    with FakeOpenAIServer(ok) as server, backend_for(server.base_url) as backend:
        sampling = SamplingParams(
            temperature=0.7, top_p=0.9, max_tokens=33, seed=5, stop=("END",),
            extra={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 4},
        )
        bare_tool = {"name": "search", "parameters": {"type": "object", "properties": {}}}
        messages = [{"role": "user", "content": "hello"}]
        tools = [WEATHER_TOOL, bare_tool]
        backend.complete([ChatRequest(messages, tools=tools, sampling=sampling)])
        backend.complete([ChatRequest(messages)])
    first, second = server.bodies
    assert first["model"] == "fake" and first["messages"] == messages
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.7, 0.9, 33)
    assert first["seed"] == 5 and first["stop"] == ["END"] and first["top_k"] == 4
    assert first["chat_template_kwargs"] == {"enable_thinking": False}
    assert first["tools"] == [WEATHER_TOOL, {"type": "function", "function": bare_tool}]
    assert "seed" not in second and "stop" not in second and "tools" not in second


def test_native_tools_off_sends_no_tools_and_reads_calls_from_text() -> None:
    leaked = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    reply = Reply(200, chat_response(leaked))
    with FakeOpenAIServer(lambda hit, body: reply) as server:
        with backend_for(server.base_url, native_tools=False) as backend:
            (completion,) = backend.complete([ChatRequest([{"role": "user", "content": "x"}],
                                                          tools=[WEATHER_TOOL])])
    assert "tools" not in server.bodies[0]
    assert completion.tool_calls == [ToolCall("get_weather", {"city": "Oslo"})]
    assert completion.text == leaked


def test_response_fields_map_to_completion() -> None:
    calls = [{"id": "call_1", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    body = chat_response("", tool_calls=calls, finish_reason="tool_calls",
                         prompt_tokens=11, completion_tokens=4)
    with FakeOpenAIServer(lambda hit, req: Reply(200, body)) as server:
        with backend_for(server.base_url) as backend:
            (completion,) = backend.complete([ask("weather?")])
    assert completion.tool_calls == [ToolCall("get_weather", {"city": "Paris"}, call_id="call_1")]
    assert completion.finish_reason == "tool_calls"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (11, 4)
    assert completion.raw == body and completion.latency_s > 0
    assert parse_action(completion.to_action()).calls[0].arguments == {"city": "Paris"}


def test_leaked_tool_call_in_content_becomes_a_tool_call() -> None:
    content = (
        "<think>maybe <tool_call>{not json}</tool_call></think>\n"
        '<tool_call>\n{"name": "search", "arguments": {"q": "cats"}}\n</tool_call>'
    )
    with FakeOpenAIServer(lambda hit, req: Reply(200, chat_response(content))) as server:
        with backend_for(server.base_url) as backend:
            (completion,) = backend.complete([ask("find cats")])
    assert completion.tool_calls == [ToolCall("search", {"q": "cats"})]
    assert completion.text == content  # raw text kept, reasoning included


@pytest.mark.parametrize("arguments", ['{"city": "Par', "[1, 2]", "not json at all"])
def test_malformed_native_arguments_surface_as_a_parse_error(arguments: str) -> None:
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "get_weather", "arguments": arguments}}]
    reply = Reply(200, chat_response(None, tool_calls=calls, finish_reason="tool_calls"))
    with FakeOpenAIServer(lambda hit, req: reply) as server:
        with backend_for(server.base_url) as backend:
            (completion,) = backend.complete([ask("weather?")])
    assert completion.tool_calls == []
    parsed = parse_action(completion.to_action())
    assert not parsed.calls and parsed.errors
    assert "get_weather" in parsed.errors[0].message
    assert json.loads(completion.text) == {"name": "get_weather", "arguments": arguments}


def test_one_malformed_call_among_several_keeps_all_visible() -> None:
    calls = [
        {"id": "a", "function": {"name": "search", "arguments": '{"q": "x"}'}},
        {"id": "b", "function": {"name": "submit", "arguments": "{oops"}},
    ]
    reply = Reply(200, chat_response("", tool_calls=calls))
    with FakeOpenAIServer(lambda hit, req: reply) as server:
        with backend_for(server.base_url) as backend:
            (completion,) = backend.complete([ask("go")])
    parsed = parse_action(completion.to_action())
    assert [c.name for c in parsed.calls] == ["search"] and len(parsed.errors) == 1


def test_strip_think_and_text_tool_calls() -> None:
    assert strip_thinking("<think>a</think>b") == "b"
    assert strip_thinking("reasoning only</think>answer") == "answer"
    assert strip_thinking("<think>never closed") == ""
    assert text_tool_calls("plain answer") == []


def test_response_without_choices_is_a_backend_error() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(200, {"error": "nope"})) as server:
        with backend_for(server.base_url) as backend, pytest.raises(BackendError, match="choices"):
            backend.complete([ask("x")])


# --- concurrency -----------------------------------------------------------------------------


def test_batch_runs_concurrently_bounded_and_in_order() -> None:
    def echo(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(200, chat_response("echo " + body["messages"][-1]["content"]), delay_s=0.2)

    with FakeOpenAIServer(echo) as server, backend_for(server.base_url, concurrency=3) as backend:
        completions = backend.complete([ask(f"q{i}") for i in range(6)])
    assert [c.text for c in completions] == [f"echo q{i}" for i in range(6)]
    assert server.max_in_flight == 3  # concurrent, and never more than the limit


def test_make_backend_builds_the_openai_backend() -> None:
    backend = make_backend({"name": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"})
    assert isinstance(backend, OpenAIBackend)
    assert backend.complete([]) == []
    backend.close()


# --- faults and retries ----------------------------------------------------------------------


def test_server_down_raises_after_retries_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with backend_for(url, max_retries=2) as backend, pytest.raises(BackendError) as info:
        backend.complete([ask("x")])
    message = str(info.value)
    assert f"{url}/chat/completions" in message
    assert "connection error" in message and "3 attempt(s)" in message


def test_timeout_is_retried_then_reported() -> None:
    slow = Reply(200, chat_response("late"), delay_s=1.0)
    with FakeOpenAIServer(lambda hit, req: slow) as server:
        with backend_for(server.base_url, timeout_s=0.2, max_retries=1) as backend:
            with pytest.raises(BackendError, match=r"timeout .*2 attempt|2 attempt.*timeout"):
                backend.complete([ask("x")])
    assert server.hits == 2


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_error_then_success_is_retried(status: int) -> None:
    def flaky(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(status, {"error": "busy"}) if hit == 1 else Reply(200, chat_response("ok"))

    with FakeOpenAIServer(flaky) as server, backend_for(server.base_url) as backend:
        (completion,) = backend.complete([ask("x")])
    assert completion.text == "ok" and server.hits == 2


def test_persistent_500_fails_naming_the_status() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(500, {"error": "boom"})) as server:
        with backend_for(server.base_url, max_retries=2) as backend:
            with pytest.raises(BackendError, match="HTTP 500") as info:
                backend.complete([ask("x")])
    assert server.hits == 3
    assert "3 attempt(s)" in str(info.value) and server.base_url in str(info.value)


def test_a_bad_gateway_is_retried_max_retries_times() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(502, "bad gateway")) as server:
        with backend_for(server.base_url, max_retries=2, backoff_s=0.01) as backend:
            with pytest.raises(BackendError, match="3 attempt"):
                backend.complete([ask("x")])
    assert server.hits == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(status, {"error": "bad request"})) as server:
        with backend_for(server.base_url) as backend:
            with pytest.raises(BackendError, match=f"HTTP {status}"):
                backend.complete([ask("x")])
    assert server.hits == 1


def test_one_failed_request_fails_the_batch() -> None:
    def picky(hit: int, body: dict[str, Any]) -> Reply:
        bad = body["messages"][-1]["content"] == "bad"
        return Reply(400, {"error": "no"}) if bad else Reply(200, chat_response("ok"))

    with FakeOpenAIServer(picky) as server, backend_for(server.base_url) as backend:
        with pytest.raises(BackendError, match="400"):
            backend.complete([ask("good"), ask("bad"), ask("good")])


# --- replicas --------------------------------------------------------------------------------


def test_requests_spread_round_robin_over_replicas() -> None:
    with FakeOpenAIServer(ok) as a, FakeOpenAIServer(ok) as b:
        with backend_for([a.base_url, b.base_url], concurrency=1) as backend:
            backend.complete([ask(f"q{i}") for i in range(6)])
    assert (a.hits, b.hits) == (3, 3)


def test_dead_replica_is_skipped_after_its_first_failure() -> None:
    dead_url = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAIServer(ok) as live, FakeOpenAIServer(lambda h, r: Reply(503, "down")) as sick:
        with backend_for([dead_url, sick.base_url, live.base_url], concurrency=1) as backend:
            completions = backend.complete([ask(f"q{i}") for i in range(8)])
    assert [c.text for c in completions] == ["fine"] * 8
    assert sick.hits == 1 and live.hits == 8


def test_replica_back_after_cooldown_rejoins_rotation() -> None:
    def recovering(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(500, "warming up") if hit == 1 else Reply(200, chat_response("a"))

    with FakeOpenAIServer(recovering) as a, FakeOpenAIServer(ok) as b:
        urls = [a.base_url, b.base_url]
        with backend_for(urls, concurrency=1, replica_cooldown_s=0.3) as backend:
            backend.complete([ask("first")])
            assert (a.hits, b.hits) == (1, 1)
            backend.complete([ask(f"q{i}") for i in range(4)])
            assert a.hits == 1  # still cooling down
            time.sleep(0.35)
            texts = [c.text for c in backend.complete([ask(f"r{i}") for i in range(4)])]
    assert texts.count("a") == 2 and a.hits == 3


def test_all_replicas_down_retries_the_least_recently_failed() -> None:
    def once_down(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(503, "down") if hit == 1 else Reply(200, chat_response("back"))

    with FakeOpenAIServer(once_down) as a, FakeOpenAIServer(lambda h, r: Reply(503, "x")) as b:
        with backend_for([a.base_url, b.base_url], max_retries=2) as backend:
            (completion,) = backend.complete([ask("x")])
    assert completion.text == "back" and (a.hits, b.hits) == (2, 1)


# --- secrets ---------------------------------------------------------------------------------


def test_api_key_is_sent_but_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_TEST_KEY", raising=False)

    def echo_key(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(401, {"error": f"Incorrect API key provided: {SECRET}"})

    with FakeOpenAIServer(echo_key) as server:
        backend = backend_for(server.base_url, api_key_env="AGENTWORLD_TEST_KEY")
        monkeypatch.setenv("AGENTWORLD_TEST_KEY", SECRET)  # read at request time
        with pytest.raises(BackendError) as info:
            backend.complete([ask("x")])
        backend.close()
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    description = backend.describe()
    assert description["api_key_env"] == "AGENTWORLD_TEST_KEY"
    assert SECRET not in json.dumps(description) and SECRET not in repr(description)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    assert "401" in str(info.value)


def test_api_key_absent_from_connection_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTWORLD_TEST_KEY", SECRET)
    url = f"http://127.0.0.1:{free_port()}/v1"
    with backend_for(url, api_key_env="AGENTWORLD_TEST_KEY", max_retries=0) as backend:
        with pytest.raises(BackendError) as info:
            backend.complete([ask("x")])
    chain = [info.value, info.value.__cause__, info.value.__context__]
    assert all(SECRET not in str(e) and SECRET not in repr(e) for e in chain if e is not None)


def test_no_key_variable_sends_no_authorization() -> None:
    with FakeOpenAIServer(ok) as server, backend_for(server.base_url) as backend:
        backend.complete([ask("x")])
    assert "authorization" not in server.headers[0]


# --- tool-support probe ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(200, chat_response(None, tool_calls=[{"id": "1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}])), "native"),
        (Reply(200, chat_response(
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')),
         "text_leaked"),
        (Reply(200, chat_response("It is sunny in Paris.")), "no_tools"),
        (Reply(400, {"error": '"auto" tool choice requires --enable-auto-tool-choice'}),
         "no_tools"),
    ],
)
def test_probe_tool_support(reply: Reply, expected: str) -> None:
    with FakeOpenAIServer(lambda hit, req: reply) as server:
        with backend_for(server.base_url, max_retries=0, native_tools=False) as backend:
            assert probe_tool_support(backend, "probe-model") == expected
    assert server.bodies[0]["model"] == "probe-model"
    assert server.bodies[0]["tools"][0]["function"]["name"] == "get_weather"


def test_probe_of_a_failing_or_unreachable_server_raises_the_cause() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(500, {"error": "boom"})) as server:
        with backend_for(server.base_url, max_retries=0) as backend, \
                pytest.raises(BackendError, match="HTTP 500"):
            probe_tool_support(backend)
    url = f"http://127.0.0.1:{free_port()}/v1"
    with backend_for(url, max_retries=0) as backend, \
            pytest.raises(BackendError, match="connection error") as raised:
        probe_tool_support(backend)
    assert url in str(raised.value)


def test_completion_type() -> None:
    with FakeOpenAIServer(ok) as server, backend_for(server.base_url) as backend:
        assert all(isinstance(c, Completion) for c in backend.complete([ask("a"), ask("b")]))
