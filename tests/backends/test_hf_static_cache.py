"""HFBackend's opt-in static cache: the dynamic cache's tokens, at a few bucket shapes."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams, make_backend
from agentworld_envs.backends.bucketing import bucket_length, bucket_rows
from agentworld_envs.backends.hf import HFBackend

TOPICS = ["hi", "lookup order 42 status", "search the weather in the city, then submit it",
          "list the files", "what is the capital of the country north of here, and why? " * 2,
          "ok", "read the ticket and answer the customer politely"]


def chats(n: int) -> list[list[dict[str, str]]]:
    """``n`` chats of 10 to 85 tokens (the fifth, of 85, is the only one over 64)."""
    system = {"role": "system", "content": "You are a careful agent that checks every step."}
    return [[system] * (i % 2) + [{"role": "user", "content": TOPICS[i % len(TOPICS)]}]
            for i in range(n)]


def token_ids(completions: list[Any]) -> list[list[int]]:
    return [c.raw["token_ids"] for c in completions]


@pytest.fixture(scope="module")
def dynamic(tiny_lm_dir: Path) -> Iterator[HFBackend]:
    backend = HFBackend(str(tiny_lm_dir), batch_size=8)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def static(tiny_lm_dir: Path) -> Iterator[HFBackend]:
    backend = make_backend({"name": "hf", "model": str(tiny_lm_dir), "batch_size": 8,
                            "cache": "static"})
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


def test_buckets() -> None:
    assert [bucket_rows(n, 8) for n in (1, 2, 3, 5, 8)] == [1, 2, 4, 8, 8]
    assert bucket_rows(5, 6) == 6  # never past batch_size
    assert [bucket_length(n) for n in (1, 64, 65, 512, 513, 640, 641, 1100)] == [
        64, 64, 128, 512, 640, 640, 768, 1280]


@pytest.mark.parametrize("extra", [{}, {"min_new_tokens": 6}], ids=["ragged", "padded"])
@pytest.mark.parametrize("rows", [3, 5])
def test_greedy_tokens_are_those_of_the_dynamic_cache(
        dynamic: HFBackend, static: HFBackend, rows: int, extra: dict) -> None:
    """Against ragged decoding (plain settings) and padded ``generate`` (a logits processor)."""
    requests = [ChatRequest(m, sampling=SamplingParams(max_tokens=6, extra=extra))
                for m in chats(rows)]
    want, got = dynamic.complete(requests), static.complete(requests)
    assert len({c.usage.input_tokens for c in want}) > 1  # really padded
    assert token_ids(got) == token_ids(want)
    assert [(c.text, c.usage, c.finish_reason) for c in got] == [
        (c.text, c.usage, c.finish_reason) for c in want]


def test_seeded_sampling_matches_the_dynamic_cache(dynamic: HFBackend, static: HFBackend) -> None:
    requests = [ChatRequest(m, sampling=SamplingParams(max_tokens=6, temperature=1.0, seed=i))
                for i, m in enumerate(chats(3))]
    got = token_ids(static.complete(requests))
    assert got == token_ids(dynamic.complete(requests))
    greedy = [ChatRequest(r.messages, sampling=SamplingParams(max_tokens=6)) for r in requests]
    assert got != token_ids(static.complete(greedy))


def test_a_row_that_ends_early_is_cut_like_the_dynamic_cache(tiny_lm_dir: Path) -> None:
    backends = [HFBackend(str(tiny_lm_dir), batch_size=4, cache=c) for c in ("dynamic", "static")]
    requests = [ChatRequest(m, sampling=SamplingParams(max_tokens=8)) for m in chats(3)]
    end = token_ids(backends[0].complete(requests))[1][2]  # the 2nd answer's 3rd token ends it
    for backend in backends:
        backend._model.generation_config.eos_token_id = [backend._tokenizer.eos_token_id, end]
        backend._eos_ids.add(end)
    want, got = (b.complete(requests) for b in backends)
    assert token_ids(got) == token_ids(want)
    assert got[1].finish_reason == "stop" and len(token_ids(got)[1]) <= 3


def test_generate_sees_only_bucket_shapes(static: HFBackend,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    shapes: list[tuple[int, int, int]] = []
    real = static._model.generate

    def recording(**kwargs: Any) -> Any:
        config = kwargs["generation_config"]
        assert config.cache_implementation == "static"
        shapes.append((*kwargs["input_ids"].shape, config.max_cache_len))
        return real(**kwargs)

    monkeypatch.setattr(static._model, "generate", recording)
    sizes = [3, 5, 6, 7, 2, 1]
    for rows in sizes:
        out = static.complete([ChatRequest(m, sampling=SamplingParams(max_tokens=3))
                               for m in chats(rows)])
        assert len(out) == rows and all(c.usage.output_tokens == 3 for c in out)
    assert [s[0] for s in shapes] == [bucket_rows(n, 8) for n in sizes]
    assert {s[0] for s in shapes} <= {1, 2, 4, 8}
    assert all(s[1] % 64 == 0 and s[2] == bucket_length(s[1] + 3) for s in shapes)
    assert {s[1] for s in shapes} == {64, 128}
    assert len(set(shapes)) == 4  # six calls of six sizes


def test_cache_option_travels_with_the_backend(static: HFBackend) -> None:
    assert static.describe()["cache"] == "static"
    again = pickle.loads(pickle.dumps(static))
    assert again.cache == "static" and again.describe() == static.describe()
    again.close()


def test_an_unknown_cache_is_refused_before_loading_anything() -> None:
    with pytest.raises(ValueError, match=r"cache must be one of \('dynamic', 'static'\)"):
        HFBackend("no-such-model", cache="paged")
