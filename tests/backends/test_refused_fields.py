"""A server that refuses sampling fields it does not support (``transformers serve`` refuses
``top_k`` with HTTP 422): the request is sent once more without them, one warning names them,
and the backend never sends them again."""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends import BackendError, ChatRequest, SamplingParams
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.replies import refused_fields
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response

SAMPLING = SamplingParams(temperature=0.6, top_p=0.95, top_k=20, max_tokens=4,
                          extra={"min_p": 0.05})


def ask(text: str, sampling: SamplingParams = SAMPLING) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], sampling=sampling)


def refusals(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "refused the request field" in str(w.message)]


@pytest.mark.server
def test_transformers_serve_refuses_top_k_and_the_backend_drops_it_once(
        tiny_server: tuple[str, str]) -> None:
    base_url, model = tiny_server
    backend = OpenAIBackend(model=model, base_url=base_url, api_key_env=None, concurrency=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = backend.complete([ask(f"hello {i}") for i in range(3)])
        again = backend.complete([ask("once more")])
    assert len(first) == 3 and len(again) == 1
    assert all(c.usage.output_tokens >= 1 for c in [*first, *again])
    (warning,) = refusals(caught)  # one warning for the whole batch and after
    assert "min_p" in warning and "top_k" in warning and "422" in warning
    assert "temperature" not in warning and "top_p" not in warning
    assert backend.describe()["refused_fields"] == ["min_p", "top_k"]


@pytest.mark.server
def test_the_readme_recipe_world_model_answers_through_transformers_serve(
        tiny_server: tuple[str, str]) -> None:
    """The default world-model sampling sends top_k: served by transformers, it is dropped
    and the model answers (no fault, no fallback observation)."""
    base_url, model = tiny_server
    env = gym.make("AgentWorld/Search-v0", sampling={"max_tokens": 8},
                   backend={"name": "openai", "model": model, "base_url": base_url,
                            "api_key_env": None})
    env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, _, _, _, info = env.step(
            '{"name": "web_search", "arguments": {"queries": ["lighthouse"]}}')
    env.close()
    assert info["world_model"]["called"] and info["world_model"]["fault"] == ""
    assert "fault" not in info["world_model"]["flags"]
    assert len(refusals(caught)) == 1


def refusing(*fields: str, status: int = 422):
    """A responder that refuses requests carrying any of ``fields``, as transformers serve."""

    def reply(_hit: int, body: dict[str, Any]) -> Reply:
        sent = sorted(set(fields) & set(body))
        if sent:
            named = ", ".join(repr(f) for f in sent)
            return Reply(status, {"detail": f"Unexpected fields in the request: {{{named}}}"})
        return Reply(200, chat_response("fine"))

    return reply


def test_refused_fields_are_never_sent_again() -> None:
    with FakeOpenAIServer(refusing("top_k")) as server, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)
        assert [c.text for c in backend.complete([ask("a"), ask("b")])] == ["fine", "fine"]
        backend.complete([ask("c")])
    with_top_k = [body for body in server.bodies if "top_k" in body]
    assert len(with_top_k) <= 2  # at most the first request of each concurrent one
    assert "top_k" not in server.bodies[-1] and server.bodies[-1]["min_p"] == 0.05
    assert server.bodies[-1]["temperature"] == 0.6
    assert len(refusals(caught)) == 1


def test_an_openai_style_refusal_is_read_too() -> None:
    def reply(_hit: int, body: dict[str, Any]) -> Reply:
        if "min_p" in body:
            return Reply(400, {"error": {"message": "Unrecognized request argument supplied: "
                                                    "min_p", "type": "invalid_request_error"}})
        return Reply(200, chat_response("fine"))

    with FakeOpenAIServer(reply) as server, pytest.warns(RuntimeWarning, match="min_p"):
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)
        assert backend.complete([ask("a")])[0].text == "fine"
    assert "top_k" in server.bodies[-1] and "min_p" not in server.bodies[-1]


def test_a_refusal_naming_no_field_of_the_request_is_reported_as_before() -> None:
    def reply(_hit: int, _body: dict[str, Any]) -> Reply:
        return Reply(422, {"detail": "Unexpected fields in the request: {'best_of'}"})

    with FakeOpenAIServer(reply) as server, warnings.catch_warnings():
        warnings.simplefilter("error")  # no refusal warning either
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)
        with pytest.raises(BackendError, match="422.*best_of") as info:
            backend.complete([ask("a")])
    assert info.value.attempts == 1 and server.hits == 1
    assert "refused_fields" not in backend.describe()


OPENAI_REFUSAL = {"error": {
    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
               "'max_completion_tokens' instead.",
    "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}


@pytest.mark.parametrize(("refusal", "named"), [
    (OPENAI_REFUSAL, "max_tokens"),
    ({"detail": "temperature 0 with a seed is not supported by this engine"}, "seed, temperature"),
    ({"detail": "Unexpected fields in the request: {'stop', 'top_k'}"}, "stop"),
])
def test_a_refused_field_of_the_api_is_an_error_never_left_out(refusal: dict[str, Any],
                                                                named: str) -> None:
    """Left out, the request would ask for something else (no length limit, another sampling)."""
    with FakeOpenAIServer(lambda hit, body: Reply(400, refusal)) as server, \
            warnings.catch_warnings():
        warnings.simplefilter("error")  # no refusal warning
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)
        (outcome,) = backend.complete_each([ask("a", SamplingParams(
            temperature=0.0, top_k=5, max_tokens=64, seed=5, stop=("END",)))])
    assert isinstance(outcome, BackendError) and outcome.status == 400
    assert f"refused the request field(s) {named}, which this backend never leaves out" in str(
        outcome)
    assert server.hits == 1 and "refused_fields" not in backend.describe()


def test_a_request_is_retried_once_only() -> None:
    """A server that refuses the retry for another field gets no third try."""
    with FakeOpenAIServer(refusing("top_k", "min_p")) as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)

        def second_refusal(_hit: int, body: dict[str, Any]) -> Reply:
            return Reply(422, {"detail": "Unexpected fields in the request: {'seed'}"})

        server.responder = lambda hit, body: (refusing("top_k")(hit, body) if hit == 1
                                              else second_refusal(hit, body))
        with pytest.warns(RuntimeWarning, match="top_k"), pytest.raises(BackendError,
                                                                        match="seed"):
            backend.complete([ask("a", SamplingParams(top_k=5, seed=3, max_tokens=4))])
    assert server.hits == 2


@pytest.mark.parametrize("reply, expected", [
    ('{"detail":"Unexpected fields in the request: {\'top_k\', \'min_p\'}"}', {"top_k", "min_p"}),
    ('{"detail":[{"type":"extra_forbidden","loc":["body","top_k"],'
     '"msg":"Extra inputs are not permitted"}]}', {"top_k"}),
    ('{"error":{"message":"Unrecognized request arguments supplied: min_p, top_k"}}',
     {"top_k", "min_p"}),
    ("Unsupported parameter: 'temperature' is not supported with this model.",
     {"temperature"}),
    ('{"detail":"top_k must be at least 1"}', set()),
    ('{"detail":"Unexpected fields in the request: {\'best_of\'}"}', set()),
])
def test_refused_fields_are_read_from_the_error_reply(reply: str, expected: set[str]) -> None:
    assert refused_fields(reply, ["temperature", "top_p", "top_k", "min_p", "seed"]) == expected


def test_cancel_closes_a_batch_in_flight_from_another_thread() -> None:
    """Ctrl-C or a timed-out call cancels the batch: its connections close at once."""
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response("late"), delay_s=30)) \
            as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None)
        outcome: list[BaseException] = []

        def call() -> None:
            try:
                backend.complete([ask("a"), ask("b")])
            except BaseException as exc:  # noqa: BLE001 - kept for the assertion
                outcome.append(exc)

        worker = threading.Thread(target=call)
        worker.start()
        for _ in range(2400):  # a hang guard of minutes, never reached when all is well
            if server.hits >= 2:
                break
            worker.join(0.05)
        backend.cancel()
        worker.join(60)  # a hang guard: the replies come only after 30 s
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], asyncio.CancelledError)
