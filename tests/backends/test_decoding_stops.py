"""HFBackend: a row stops decoding once its stop string is complete, and no row of a batch
decodes past its model's context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.stops import StopWatch

PROMPTS = [[{"role": "user", "content": "lookup order 42 status"}],
           [{"role": "user", "content": "hi"}]]
PATHS = {  # backend settings, sampling settings: every way the backend decodes
    "drafted": ({}, {}),
    "ragged": ({"draft": "none"}, {}),
    "ragged, sampled": ({}, {"temperature": 1.0, "seed": 3}),
    "generate": ({}, {"extra": {"repetition_penalty": 1.1}}),
    "static cache": ({"cache": "static"}, {}),
}


def _shared_stop(texts: list[str]) -> str:
    """A two-character string early in the first text that the second holds too."""
    first, second = texts
    return next(first[at : at + 2] for at in range(2, len(first) - 1)
                if first[at : at + 2].strip() and first[at : at + 2] in second)


@pytest.mark.parametrize("path", PATHS)
def test_a_row_stops_decoding_once_its_stop_string_is_complete(tiny_lm_dir: Path,
                                                               path: str) -> None:
    settings, sampling = PATHS[path]
    backend = HFBackend(str(tiny_lm_dir), **settings)
    full = backend.complete([ChatRequest(m, sampling=SamplingParams(max_tokens=60, **sampling))
                             for m in PROMPTS])
    stop = _shared_stop([completion.text for completion in full])
    passes = []
    hook = backend._model.register_forward_hook(lambda *_: passes.append(1))
    cut = backend.complete([ChatRequest(m, sampling=SamplingParams(max_tokens=200, stop=(stop,),
                                                                   **sampling))
                            for m in PROMPTS])
    hook.remove()
    kept = [completion.usage.output_tokens for completion in cut]
    assert max(kept) < 60 and {completion.finish_reason for completion in cut} == {"stop"}
    # a prefill per prompt at most, then a step per token of the longest answer: not 200
    assert len(passes) <= len(PROMPTS) + max(kept)
    for short, long in zip(cut, full, strict=True):  # the same answers as before
        assert short.raw["token_ids"] == long.raw["token_ids"][: len(short.raw["token_ids"])]
        assert short.text == long.text[: long.text.find(stop)]


def test_a_stop_watch_reads_the_tail_only() -> None:
    read: list[list[int]] = []

    def decode(ids: list[int]) -> str:
        read.append(ids)
        return "".join("abcd"[i - 1] for i in ids)

    watch = StopWatch(["", "cd"], decode)
    assert not watch([1, 2] * 50, fresh=1) and len(read[-1]) == 1 + watch.reach < 100
    assert watch([1, 2] * 50 + [3, 4, 1, 2, 1], fresh=3)  # completed in an accepted draft
    assert not StopWatch([""], decode)([3, 4], fresh=2)


@pytest.fixture(scope="module")
def absolute_positions(tiny_lm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny GPT-2 (learned positions: none past its 64) with the tiny model's tokenizer."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("gpt2")
    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text())["n_positions"] == 64
    return str(folder)


@pytest.mark.parametrize("path", PATHS)
def test_no_row_of_a_batch_decodes_past_its_context(absolute_positions: str, path: str) -> None:
    """A short prompt's room no longer runs a long prompt's row past the model's positions
    (an IndexError on a model with learned positions)."""
    settings, sampling = PATHS[path]
    backend = HFBackend(absolute_positions, **settings)
    prompts = [[{"role": "user", "content": "hi"}],
               [{"role": "user", "content": "search the weather in the city " * 3}]]
    sampling = SamplingParams(max_tokens=200, **sampling)
    together = backend.complete([ChatRequest(m, sampling=sampling) for m in prompts])
    for prompt, answer in zip(prompts, together, strict=True):
        assert answer.usage.input_tokens + answer.usage.output_tokens == 64
        assert answer.finish_reason == "length"
        (alone,) = backend.complete([ChatRequest(prompt, sampling=sampling)])
        assert answer.raw["token_ids"] == alone.raw["token_ids"]
