"""Prompt-prefix caching: what the cache keeps and drops, and that decoding from kept prefixes
gives the tokens of decoding from scratch, on the tiny model (the ragged decoder, the drafted
one, and the ``hf`` backend's ``prefix_cache`` setting over a growing conversation)."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.drafting import DraftedDecoder
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.prefix_cache import PrefixCache
from agentworld_envs.backends.ragged import RaggedDecoder, ragged_decoder
from tests.helpers.decoding import VOCAB, greedy, token_prompts

# The cache alone.


def test_the_longest_shared_prefix_wins_and_one_token_is_left_to_run() -> None:
    cache = PrefixCache(100)
    cache.put([1, 2, 3], "a")
    cache.put([1, 2, 7, 8, 9], "b")
    assert cache.longest([1, 2, 7, 8, 5]) == (4, "b")
    assert cache.longest([1, 2, 3, 4]) == (3, "a")
    assert cache.longest([1, 2, 5])[0] == 2  # either entry serves
    assert cache.longest([1, 2, 3]) == (2, "a")  # the whole prompt is kept: its last token runs
    assert cache.longest([9, 1, 2]) == (0, None)
    assert cache.longest([1]) == (0, None)  # nothing can be reused of a one-token prompt


def test_a_prompt_that_extends_a_kept_one_replaces_it() -> None:
    cache = PrefixCache(100)
    cache.put([1, 2, 3], "turn 1")
    cache.put([1, 2, 3, 4, 5], "turn 2")
    assert cache.size == 5
    assert cache.longest([1, 2, 3, 9]) == (3, "turn 2")
    cache.put([1, 2], "shorter")  # already held by a kept entry: nothing changes
    assert cache.size == 5 and cache.longest([1, 2, 9]) == (2, "turn 2")


def test_the_least_recently_used_go_first_and_the_budget_holds() -> None:
    cache = PrefixCache(10)
    cache.put([1, 1, 1, 1], "a")
    cache.put([2, 2, 2, 2], "b")
    assert cache.longest([1, 1, 1, 5]) == (3, "a")  # "a" is now the most recently used
    cache.put([3, 3, 3, 3], "c")  # 12 tokens > 10: "b" goes
    assert cache.size == 8
    assert cache.longest([2, 2, 2, 5]) == (0, None)
    assert cache.longest([1, 1, 1, 5])[1] == "a" and cache.longest([3, 3, 5])[1] == "c"
    cache.put(list(range(11)), "too long")  # longer than the whole budget: not kept
    assert cache.size == 8 and cache.longest(list(range(11))) == (0, None)
    cache.clear()
    assert cache.size == 0 and cache.longest([1, 1, 1, 5]) == (0, None)


def test_the_budget_holds_under_threads() -> None:
    cache = PrefixCache(64)

    def fill(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(300):
            prompt = [rng.randrange(4) for _ in range(rng.randint(1, 20))]
            cache.put(prompt, seed)
            cache.longest(prompt + [9])

    threads = [threading.Thread(target=fill, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 0 < cache.size <= 64
    assert cache.size == sum(len(tokens) for tokens, _ in cache._entries.values())


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_a_bad_budget_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="tokens must be an integer >= 1"):
        PrefixCache(bad)


# Decoding from kept prefixes.


@pytest.fixture
def model(tiny_lm_model: Any) -> Any:
    return tiny_lm_model


@pytest.fixture
def scratch(tiny_ragged: RaggedDecoder) -> RaggedDecoder:
    return tiny_ragged


def cached(model: Any, tokens: int = 100_000) -> RaggedDecoder:
    import torch

    decoder = ragged_decoder(torch, model, PrefixCache(tokens))
    assert decoder is not None
    return decoder


def conversation(prompts: list[list[int]], answers: list[list[int]], seed: int
                 ) -> list[list[int]]:
    """Each prompt's next turn: the prompt, its answer and a new user turn (as a simulated
    env's next world-model prompt starts with its last)."""
    rng = random.Random(seed)
    return [p + a + [rng.randrange(3, VOCAB) for _ in range(rng.randint(1, 30))]
            for p, a in zip(prompts, answers, strict=True)]


@pytest.mark.parametrize("seed", [0, 1])
def test_ragged_decoding_from_kept_prefixes_gives_the_same_tokens(
        model: Any, scratch: RaggedDecoder, seed: int) -> None:
    import torch

    decoder = cached(model)
    prompts = token_prompts(seed, 12)
    pick = lambda rows, scores: scores.float().argmax(dim=-1)  # noqa: E731
    turns = [prompts]
    for turn in range(3):
        reference = greedy(scratch, turns[-1], 16)
        with torch.inference_mode():
            reused = decoder.prefill(turns[-1]).reused
        assert decoder.decode(turns[-1], 16, set(), pick) == reference
        if turn:  # every row reuses its whole last prompt: what it adds is all that runs
            assert reused == [len(p) for p in turns[-2]]
        else:
            assert reused == [0] * len(prompts)
        turns.append(conversation(turns[-1], reference, seed + turn))


def test_drafted_decoding_from_kept_prefixes_gives_the_same_tokens(
        model: Any, scratch: RaggedDecoder) -> None:
    import torch

    decoder = DraftedDecoder(torch, cached(model), pad_id=0)
    prompts = token_prompts(5, 12)
    first, first_stats = decoder.decode(prompts, 20, set())
    assert first == greedy(scratch, prompts, 20)
    assert [s.reused for s in first_stats] == [0] * len(prompts)
    follow = conversation(prompts, first, 5)
    # a row that shares only part of a kept prompt, one that repeats a kept prompt, and one
    # that shares nothing (run alone while the others' rests run in one batch)
    follow[0] = prompts[4][: len(prompts[4]) // 2] + [7, 8, 9]
    follow[1] = list(prompts[2])
    follow.append([VOCAB + 1] + prompts[3])
    out, stats = decoder.decode(follow, 20, set())
    assert out == greedy(scratch, follow, 20)
    assert len(prompts[4]) // 2 > 0
    assert stats[0].reused == len(prompts[4]) // 2 and stats[1].reused == len(prompts[2]) - 1
    assert [s.reused for s in stats[2:-1]] == [len(p) for p in prompts[2:]]
    assert stats[-1].reused == 0


def test_a_small_budget_keeps_the_tokens_and_reuses_less(model: Any,
                                                         scratch: RaggedDecoder) -> None:
    import torch

    decoder = DraftedDecoder(torch, cached(model, tokens=400), pad_id=0)
    prompts = token_prompts(6, 12)
    first, _ = decoder.decode(prompts, 12, set())
    follow = conversation(prompts, first, 6)
    out, stats = decoder.decode(follow, 12, set())
    assert out == greedy(scratch, follow, 12)
    assert decoder._ragged.prefixes.size <= 400
    assert 0 < sum(s.reused for s in stats) < sum(len(p) for p in prompts)


# The ``hf`` backend's setting, over a conversation.


def chats(turns: int) -> list[list[dict[str, str]]]:
    """Conversations a turn longer each time, as a simulated env's world-model chat grows."""
    out = []
    for i in range(4):
        chat = [{"role": "system", "content": f"World {i}: records R-{i} and R-{i + 1}."}]
        for turn in range(turns):
            chat.append({"role": "user", "content": f"turn {turn}: lookup R-{i + turn % 2}"})
            if turn < turns - 1:
                chat.append({"role": "assistant", "content": f"R-{i + turn % 2} is active"})
        out.append(chat)
    return out


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_hf_answers_with_a_prefix_cache_are_the_answers_without(
        tiny_lm_dir: Path, temperature: float) -> None:
    without = HFBackend(str(tiny_lm_dir))
    backend = HFBackend(str(tiny_lm_dir), prefix_cache=4096)
    assert backend.describe()["prefix_cache"] == 4096 and "prefix_cache" not in without.describe()
    for turns in (1, 2, 3):
        requests = [ChatRequest(chat, sampling=SamplingParams(
            max_tokens=12, temperature=temperature, seed=i if temperature else None))
            for i, chat in enumerate(chats(turns))]
        for batch in (requests, requests[:1]):  # a batch, and one request alone
            out, reference = backend.complete(batch), without.complete(batch)
            assert [c.raw["token_ids"] for c in out] == [c.raw["token_ids"] for c in reference]
            assert [(c.text, c.usage) for c in out] == [(c.text, c.usage) for c in reference]
        if temperature == 0 and turns > 1:
            assert all(c.raw["draft"]["reused"] > 0 for c in out)
    assert 0 < backend._decoder.prefixes.size <= 4096


@pytest.mark.parametrize("bad", [-1, 1.5, "many", None])
def test_hf_refuses_a_bad_prefix_cache(tiny_lm_dir: Path, bad: Any) -> None:
    with pytest.raises(ValueError, match="prefix_cache must be an integer >= 0"):
        HFBackend(str(tiny_lm_dir), prefix_cache=bad)
