"""A reply without usage counts has unknown token counts, not zero: the completion says which
counts are unknown, and the backend warns once that its server leaves them out."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.replies import (
    USAGE_UNKNOWN_KEY,
    completion_from_reply,
    unknown_usage,
)
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response


def reply(usage: Any) -> dict[str, Any]:
    body = chat_response("ok")
    if usage is ...:
        del body["usage"]
    else:
        body["usage"] = usage
    return body


@pytest.mark.parametrize(("usage", "unknown"), [
    (..., ["prompt_tokens", "completion_tokens"]),
    (None, ["prompt_tokens", "completion_tokens"]),
    ({"total_tokens": 9}, ["prompt_tokens", "completion_tokens"]),
    ({"prompt_tokens": 5, "completion_tokens": None}, ["completion_tokens"]),
    ({"prompt_tokens": 0, "completion_tokens": 0}, []),
])
def test_the_counts_a_reply_leaves_out_are_named_as_unknown(usage: Any,
                                                            unknown: list[str]) -> None:
    completion = completion_from_reply(reply(usage), 0.1)
    assert unknown_usage(completion) == unknown
    assert (USAGE_UNKNOWN_KEY in completion.raw) == bool(unknown)


def test_a_server_without_usage_is_warned_about_once() -> None:
    with FakeOpenAIServer(lambda hit, body: Reply(200, reply(...))) as server:
        backend = OpenAIBackend("m", server.base_url, api_key_env=None)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            first = backend.complete([ChatRequest([{"role": "user", "content": "a"}])] * 3)
            backend.complete([ChatRequest([{"role": "user", "content": "b"}])])
    told = [w for w in seen if issubclass(w.category, RuntimeWarning)]
    assert len(told) == 1
    assert "without usage.prompt_tokens, usage.completion_tokens" in str(told[0].message)
    assert all(unknown_usage(c) == ["prompt_tokens", "completion_tokens"] for c in first)


def test_a_server_with_usage_is_not_warned_about() -> None:
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response("ok"))) as server:
        backend = OpenAIBackend("m", server.base_url, api_key_env=None)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (completion,) = backend.complete([ChatRequest([{"role": "user", "content": "a"}])])
    assert unknown_usage(completion) == [] and completion.usage.total_tokens == 10
