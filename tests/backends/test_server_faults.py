"""Faulty OpenAI-compatible servers on loopback: every fault is a reported error, never a crash,
a hang, a leaked credential or a record that cannot be written."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import re
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

from agentworld_envs.backends import BackendError, ChatRequest, Completion, openai_compat
from agentworld_envs.backends.openai_compat import OpenAIBackend, OpenAIRequestError
from agentworld_envs.backends.redaction import redact, url_secrets
from agentworld_envs.backends.replay import completion_to_dict
from agentworld_envs.backends.replies import REPAIRS_KEY, MalformedReplyError
from agentworld_envs.protocol.tool_calls import ToolCall
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import run_episode
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, fake_backend

SECRET = "sk-reflected-0123456789abcdef"
PASSWORD = "hunter2-pw"


def ask(text: str = "hi") -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}])


def writable(completion: Completion) -> str:
    """The completion as a record line would hold it; raises if it cannot be encoded."""
    line = json.dumps(completion_to_dict(completion), ensure_ascii=False)
    line.encode("utf-8")
    return line


def reply_with(body: dict[str, Any] | str) -> Completion | BackendError:
    with FakeOpenAIServer(lambda hit, req: Reply(200, body)) as server:
        return fake_backend(server.base_url).complete_each([ask()])[0]


# --- whole-request deadlines -----------------------------------------------------------------


def test_a_trickling_reply_is_cut_off_by_the_whole_request_deadline() -> None:
    # 400 bytes, one every 25 ms: 10 s in all, while each read waits far less than timeout_s.
    body = json.dumps(chat_response("x" * 200))
    trickle = Reply(200, body + " " * (400 - len(body)), chunk=1, pause_s=0.025)
    with FakeOpenAIServer(lambda hit, req: trickle) as server:
        (outcome,) = fake_backend(server.base_url, timeout_s=1.0).complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError)
    assert "timeout after 1 s" in str(outcome) and outcome.attempts == 1


# --- Retry-After -----------------------------------------------------------------------------


def _patient(retry_after: str, wait_s: float):
    """429 with ``Retry-After`` first; later requests get 200 only if they waited ``wait_s``."""
    def responder(hit: int, body: dict[str, Any]) -> Reply:
        if hit == 1:
            return Reply(429, {"error": "slow down"}, headers={"Retry-After": retry_after})
        waited = server.arrivals[-1] - server.arrivals[0]
        return Reply(200, chat_response("ok")) if waited >= wait_s else Reply(
            503, {"error": f"came back after {waited:.2f} s"})
    server = FakeOpenAIServer(responder)
    return server


@pytest.mark.parametrize("header", ["seconds", "http_date"])
def test_retry_after_is_honoured(header: str) -> None:
    value = ("1" if header == "seconds"
             else email.utils.formatdate(time.time() + 2, usegmt=True))  # 1-2 s away
    with _patient(value, wait_s=0.8) as server:
        backend = fake_backend(server.base_url, max_retries=1, backoff_s=0.001)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, Completion) and outcome.text == "ok"
    assert server.hits == 2


def test_retry_after_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    def responder(hit: int, body: dict[str, Any]) -> Reply:
        if hit == 1:
            return Reply(503, "busy", headers={"Retry-After": "86400"})
        return Reply(200, chat_response("back"))

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, *args: Any, **kwargs: Any) -> Any:
        waits.append(delay)
        return await real_sleep(min(delay, 0.05), *args, **kwargs)  # a broken cap costs no day

    monkeypatch.setattr(openai_compat.asyncio, "sleep", recorded)
    with FakeOpenAIServer(responder) as server:
        backend = fake_backend(server.base_url, max_retries=1, max_retry_after_s=0.05)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, Completion) and outcome.text == "back"
    assert 0.05 in waits and max(waits) <= 0.05  # asked for a day, the backend waited its cap


# --- per-request faults ----------------------------------------------------------------------


def test_one_failed_request_in_a_batch_costs_only_its_own_completion() -> None:
    def picky(hit: int, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "bad":
            return Reply(400, {"error": "no"})
        return Reply(200, chat_response("re: " + body["messages"][-1]["content"]))

    prompts = ["a", "b", "bad", "c", "d"]
    with FakeOpenAIServer(picky) as server:
        backend = fake_backend(server.base_url, concurrency=3)
        outcomes = backend.complete_each([ask(p) for p in prompts])
        with pytest.raises(BackendError, match="400"):
            backend.complete([ask(p) for p in prompts])
    assert isinstance(outcomes[2], OpenAIRequestError) and outcomes[2].status == 400
    assert [o.text for i, o in enumerate(outcomes) if i != 2] == ["re: a", "re: b", "re: c",
                                                                  "re: d"]


def test_an_undecodable_reply_is_retried_then_costs_only_its_request() -> None:
    def broken_gzip(hit: int, body: dict[str, Any]) -> Reply:
        text = body["messages"][-1]["content"]
        if text == "bad":
            return Reply(200, b"not gzip at all", headers={"Content-Encoding": "gzip"})
        return Reply(200, chat_response("re: " + text))

    with FakeOpenAIServer(broken_gzip) as server:
        outcomes = fake_backend(server.base_url, max_retries=1).complete_each(
            [ask("a"), ask("bad"), ask("c")])
    assert [o.text for o in outcomes[::2]] == ["re: a", "re: c"]
    assert isinstance(outcomes[1], OpenAIRequestError) and outcomes[1].attempts == 2
    assert "undecodable reply" in str(outcomes[1]) and server.hits == 4


def test_any_other_failure_of_a_request_costs_only_that_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_on_boom(data: Any, *args: Any) -> Completion:
        if data["choices"][0]["message"]["content"] == "boom":
            raise LookupError(f"unexpected for {PASSWORD}")
        return real(data, *args)

    real = openai_compat.completion_from_reply
    monkeypatch.setattr(openai_compat, "completion_from_reply", failing_on_boom)
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response(
            body["messages"][-1]["content"]))) as server:
        url = server.base_url.replace("://", f"://alice:{PASSWORD}@")
        outcomes = fake_backend(url).complete_each([ask("a"), ask("boom"), ask("c")])
    assert [o.text for o in outcomes[::2]] == ["a", "c"]
    assert type(outcomes[1]) is BackendError and "LookupError: unexpected for ***" in str(
        outcomes[1])


def test_a_recording_keeps_the_completions_and_reports_the_failure(tmp_path) -> None:
    from agentworld_envs.backends.replay import RecordingBackend

    def picky(hit: int, body: dict[str, Any]) -> Reply:
        bad = body["messages"][-1]["content"] == "bad"
        return Reply(503 if bad else 200, "down" if bad else chat_response("ok"))

    with FakeOpenAIServer(picky) as server:
        recording = RecordingBackend(fake_backend(server.base_url), tmp_path / "cache.jsonl")
        outcomes = recording.complete_each([ask("a"), ask("bad"), ask("b")])
        recording.close()
    assert [type(o).__name__ for o in outcomes] == ["Completion", "OpenAIRequestError",
                                                    "Completion"]
    assert len(recording.cache) == 2


def test_a_batch_sent_from_inside_a_running_event_loop() -> None:
    import asyncio

    async def inside_a_loop(backend: OpenAIBackend) -> list:
        return backend.complete([ask("a"), ask("b")])

    with FakeOpenAIServer(lambda hit, req: Reply(200, chat_response("ok"))) as server:
        completions = asyncio.run(inside_a_loop(fake_backend(server.base_url)))
    assert [c.text for c in completions] == ["ok", "ok"]


# --- malformed replies -----------------------------------------------------------------------


def _with(**message: Any) -> dict[str, Any]:
    body = chat_response("fine")
    body["choices"][0]["message"].update(message)
    return body


def _usage(value: str) -> str:
    return ('{"choices": [{"message": {"role": "assistant", "content": "x"}}], '
            f'"usage": {{"prompt_tokens": {value}, "completion_tokens": 1}}}}')


@pytest.mark.parametrize(("body", "named"), [
    ({"choices": [{"message": "hello", "finish_reason": "stop"}]}, "message"),
    ({"choices": [{"finish_reason": "stop"}]}, "message"),
    ({"choices": ["hello"]}, "choices[0]"),
    ({"choices": []}, "choices"),
    (_with(content=5), "content"),
    (_with(content=[{"type": "text", "text": 3}]), "content"),
    (_with(tool_calls="get_weather"), "tool_calls"),
    ({**chat_response("x"), "usage": "lots"}, "usage"),
    (_usage('"many"'), "prompt_tokens"),
    (_usage("1e400"), "prompt_tokens"),
    (_usage("NaN"), "prompt_tokens"),
    (_usage("-3"), "prompt_tokens"),
    (_usage("2.5"), "prompt_tokens"),
    (_usage("true"), "prompt_tokens"),
    ({"choices": [{"message": {"content": "x"}, "finish_reason": 7}]}, "finish_reason"),
    ("[" * 100_000, "JSON object"),
])
def test_a_malformed_reply_is_a_reported_fault(body: Any, named: str) -> None:
    outcome = reply_with(body)
    assert isinstance(outcome, BackendError), outcome
    assert named in str(outcome)


def test_usage_given_as_whole_floats_or_left_out_is_read() -> None:
    assert reply_with(_usage("12.0")).usage.input_tokens == 12
    body = chat_response("x")
    del body["usage"]
    usage = reply_with(body).usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (None, None, None)


def test_lone_surrogates_in_content_are_replaced_and_said_so() -> None:
    outcome = reply_with('{"choices": [{"message": {"content": "hi \\ud800 there \\udfff"}}]}')
    assert outcome.text == "hi \ufffd there \ufffd"
    assert outcome.raw[REPAIRS_KEY] == ["replaced 2 lone surrogate(s) with U+FFFD"]
    assert "\ufffd" in writable(outcome)


@pytest.mark.parametrize("arguments", [
    '"{\\"city\\": \\"Par\\\\ud800is\\"}"',  # an escape inside the arguments' own JSON text
    '"{\\"city\\": \\"Par\\ud800is\\"}"',  # a surrogate in the arguments string itself
])
def test_lone_surrogates_in_tool_arguments_are_replaced(arguments: str) -> None:
    call = ('{"id": "c1", "type": "function", "function": {"name": "get_weather", '
            f'"arguments": {arguments}}}}}')
    outcome = reply_with('{"choices": [{"message": {"content": null, '
                         f'"tool_calls": [{call}]}}, "finish_reason": "tool_calls"}}]}}')
    assert outcome.tool_calls == [ToolCall("get_weather", {"city": "Par\ufffdis"}, "c1")]
    assert "lone surrogate" in outcome.raw[REPAIRS_KEY][0]
    writable(outcome)
    json.dumps(outcome.to_action(), ensure_ascii=False).encode("utf-8")


def test_a_surrogate_in_the_request_is_sent_escaped_not_a_crash() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(200, chat_response("ok"))) as server:
        (outcome,) = fake_backend(server.base_url).complete_each([ask("agent text \ud800")])
    assert outcome.text == "ok" and server.bodies[0]["messages"][0]["content"].endswith("\ud800")


# --- secrets ---------------------------------------------------------------------------------


def reflecting_server() -> FakeOpenAIServer:
    """A server that echoes the credentials it was sent, in the content and elsewhere."""
    def responder(hit: int, body: dict[str, Any]) -> Reply:
        auth = server.headers[hit - 1].get("authorization", "")
        reply = chat_response(f"your credentials: {auth}")
        reply["echo"] = {"auth": auth, auth: "as a key"}
        return Reply(200, reply)
    server = FakeOpenAIServer(responder)
    return server


def test_a_key_reflected_in_a_reply_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTWORLD_FAULT_KEY", SECRET)
    with reflecting_server() as server:
        (outcome,) = fake_backend(server.base_url,
                                 api_key_env="AGENTWORLD_FAULT_KEY").complete_each([ask()])
    assert server.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert outcome.text == "your credentials: Bearer ***"
    assert SECRET not in writable(outcome)
    assert "masked credentials" in outcome.raw[REPAIRS_KEY][-1]


def test_credentials_in_the_base_url_are_sent_but_never_shown() -> None:
    with reflecting_server() as server:
        url = server.base_url.replace("://", f"://alice:{PASSWORD}@")
        backend = fake_backend(url)
        (outcome,) = backend.complete_each([ask()])
        description = json.dumps(backend.describe())
    token = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert server.headers[0]["authorization"] == f"Basic {token}"
    assert PASSWORD not in description and "alice" not in description
    assert "://***@127.0.0.1" in description
    assert token not in writable(outcome) and PASSWORD not in writable(outcome)


def test_credentials_in_the_base_url_stay_out_of_errors() -> None:
    with FakeOpenAIServer(lambda hit, req: Reply(500, f"bad {PASSWORD}")) as server:
        url = server.base_url.replace("://", f"://alice:{PASSWORD}@")
        (outcome,) = fake_backend(url).complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError)
    assert PASSWORD not in str(outcome) and PASSWORD not in outcome.url
    assert "HTTP 500" in str(outcome)


def test_redact_masks_userinfo_and_secrets_anywhere() -> None:
    value = {"urls": ["https://u:p%40ss@h.example/v1", "http://plain/v1"],
             "k sk-1 k": ("sk-1", 3, None)}
    assert redact(value, ["sk-1", "", None]) == {
        "urls": ["https://***@h.example/v1", "http://plain/v1"], "k *** k": ("***", 3, None)}
    assert set(url_secrets("https://u:p%40ss@h/v1")) == {
        "p%40ss", "p@ss", base64.b64encode(b"u:p@ss").decode()}
    assert url_secrets("http://h/v1") == []
    short = OpenAIBackend("m", "http://u:p@127.0.0.1:1/v1", api_key_env=None)
    assert short.describe()["base_urls"] == ["http://***@127.0.0.1:1/v1"]


_REFERENCE_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@]+@")  # the old, quadratic


def test_redact_masks_what_the_reference_regex_masks_on_random_text() -> None:
    rng = np.random.default_rng(29)
    alphabet = list("ab1+.-:/@ ?#x")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 24))))
        assert redact(text) == _REFERENCE_USERINFO.sub(r"\1***@", text), text


def test_redact_takes_linear_time_on_the_fuzzers_long_words() -> None:
    """Each input is 1 MB: hours for the quadratic regex (148 s at 40 KB), well under a second
    now. The subprocess and its timeout only guard the suite against a hang."""
    script = (
        "from agentworld_envs.backends.redaction import redact\n"
        "n = 1 << 20\n"
        "for text in ('y' * n, 'y' * n + '://u:pw@h', 'a://' * (n // 4), 'a1+' * (n // 3)):\n"
        "    print(redact(text, ['pw'])[-12:])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=True)
    assert done.stdout.split() == ["y" * 12, "yyyy://***@h", "a://" * 3, "a1+" * 4]


def test_a_reply_over_max_reply_bytes_is_a_fault_not_retried() -> None:
    big = chat_response("x" * 5000)
    with FakeOpenAIServer(lambda hit, req: Reply(200, big)) as server:
        (outcome,) = fake_backend(server.base_url, max_retries=2,
                                 max_reply_bytes=4000).complete_each([ask()])
        (fits,) = fake_backend(server.base_url, max_reply_bytes=len(json.dumps(big)) + 100
                              ).complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError) and outcome.status == 200
    assert "over max_reply_bytes (4000)" in str(outcome) and outcome.attempts == 1
    assert server.hits == 2 and isinstance(fits, Completion) and fits.text == "x" * 5000


@pytest.mark.parametrize("bad", [0, -1, 1.5, "big"])
def test_max_reply_bytes_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_reply_bytes must be a positive integer"):
        fake_backend("http://127.0.0.1:9/v1", max_reply_bytes=bad)


def test_harness_records_and_metadata_hold_no_credentials(tmp_path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTWORLD_FAULT_KEY", SECRET)
    with reflecting_server() as server:
        config = {"name": "openai", "model": "fake", "api_key_env": "AGENTWORLD_FAULT_KEY",
                  "base_url": server.base_url.replace("://", f"://alice:{PASSWORD}@"),
                  "max_retries": 0}
        record = run_episode("C3", config)
    corpus = RunCorpus(tmp_path)
    corpus.write_metadata({"arms": {"m": {"backend": config}}})
    written = json.dumps(record) + (tmp_path / "metadata.json").read_text()
    assert record["turns"] >= 1
    for secret in (SECRET, PASSWORD, *url_secrets(config["base_url"])):
        assert secret not in written


def test_malformed_reply_error_type() -> None:
    outcome = reply_with({"choices": [{"message": "hello"}]})
    assert isinstance(outcome, MalformedReplyError)


def test_request_error_survives_the_async_vector_env_error_queue():
    """AsyncVectorEnv pickles a worker's error and re-raises ``type(e)(e)``: keep the fields."""
    import pickle

    from agentworld_envs.backends.openai_compat import OpenAIRequestError

    error = OpenAIRequestError("HTTP 503", url="http://127.0.0.1:9/v1", status=503, attempts=3)
    for copy in (pickle.loads(pickle.dumps(error)), OpenAIRequestError(error)):
        assert (str(copy), copy.url, copy.status, copy.attempts) == (
            "HTTP 503", "http://127.0.0.1:9/v1", 503, 3)
