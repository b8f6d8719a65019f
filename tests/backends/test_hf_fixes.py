"""HFBackend: the model's context, stop strings' tokens, and generation configs that name
``max_length``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agentworld_envs.backends import BackendError, ChatRequest, SamplingParams
from agentworld_envs.backends.generation_config import generation_config, needs_generate
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.stops import cut_at_stop, tokens_to_stop

SHORT = [{"role": "user", "content": "hi"}]
LONG = [{"role": "user", "content": "search the weather in the city " * 12}]


@pytest.fixture(scope="module")
def short_context(tiny_lm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> HFBackend:
    """The tiny model with a context of 64 tokens."""
    folder = tmp_path_factory.mktemp("short_context")
    shutil.copytree(tiny_lm_dir, folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 64}))
    return HFBackend(str(folder))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_an_answer_ends_where_the_models_context_does(short_context: HFBackend,
                                                      temperature: float) -> None:
    """No token is decoded past the context (generate would run on past the positions the
    model knows): the answer is cut there and finishes with "length"."""
    sampling = SamplingParams(max_tokens=200, temperature=temperature, seed=1,
                              extra={"min_new_tokens": 200})
    middle_prompt = [{"role": "user", "content": "search the weather in the city " * 3}]
    short, middle = (ChatRequest(m, sampling=sampling) for m in (SHORT, middle_prompt))
    answers = short_context.complete([short, middle])
    for request, answer in zip((short, middle), answers, strict=True):
        prompt = len(short_context._prompts([request])[1][0])
        assert 0 < prompt < 64 and answer.usage.output_tokens == 64 - prompt
        assert answer.finish_reason == "length"


def test_a_prompt_that_fills_the_context_is_refused_by_name(short_context: HFBackend) -> None:
    fits = ChatRequest(SHORT, sampling=SamplingParams(max_tokens=8))
    too_long = ChatRequest([{"role": "user", "content": "search the weather " * 40}],
                           sampling=SamplingParams(max_tokens=8))
    with pytest.raises(BackendError, match=r"the prompt has \d+ tokens and the model's context "
                                           r"is 64: shorten the prompt"):
        short_context.complete([fits, too_long])
    answered, refused = short_context.complete_each([fits, too_long])
    assert isinstance(refused, BackendError) and "context is 64" in str(refused)
    assert answered.raw["token_ids"] == short_context.complete([fits])[0].raw["token_ids"]


def test_a_stop_string_ends_the_tokens_at_the_one_that_completes_it(tiny_lm_dir: Path) -> None:
    backend = HFBackend(str(tiny_lm_dir))
    prompts = [[{"role": "user", "content": "lookup order 42 status"}], SHORT]
    full = backend.complete([ChatRequest(m, sampling=SamplingParams(max_tokens=16))
                             for m in prompts])
    text = full[0].text.strip()
    assert len(full[0].raw["token_ids"]) == 16 and len(text) >= 6
    stop = text[3:5]
    for batch in ([prompts[0]], prompts):  # drafted alone, ragged in a batch
        for sampling in (SamplingParams(max_tokens=16, stop=(stop,)),
                         SamplingParams(max_tokens=16, stop=(stop,), extra={"min_new_tokens": 16})):
            cut = backend.complete([ChatRequest(m, sampling=sampling) for m in batch])[0]
            ids = cut.raw["token_ids"]
            assert cut.text == full[0].text[: full[0].text.find(stop)]
            assert ids == full[0].raw["token_ids"][: len(ids)] and len(ids) < 16
            assert stop in backend._decode(ids) and stop not in backend._decode(ids[:-1])
            assert cut.usage.output_tokens == len(ids) and cut.finish_reason == "stop"


def test_the_stop_string_completed_first_is_the_one_that_cuts() -> None:
    assert cut_at_stop("abcdef", ["abcdef", "cd"]) == ("ab", True)
    assert cut_at_stop("x</tool_call>", ["call>", "</tool_call>"]) == ("x", True)
    assert cut_at_stop("abc", ["", "z"]) == ("abc", False)
    decode = "".join
    assert tokens_to_stop(list("abcdef"), ["abcdef", "cd"], decode) == list("abcd")
    assert tokens_to_stop(list("abc"), ["z"], decode) == list("abc")
    assert tokens_to_stop(list("abc"), [], decode) == list("abc")


def test_max_length_in_a_models_generation_config_keeps_ragged_decoding(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    from transformers import GenerationConfig

    # max_new_tokens, always set, overrides max_length: it makes no logits processor
    assert not needs_generate(generation_config(GenerationConfig(max_length=4096),
                                                SamplingParams(), 0))
    assert needs_generate(generation_config(GenerationConfig(max_length=4096),
                                            SamplingParams(extra={"repetition_penalty": 1.1}),
                                            0))
    shutil.copytree(tiny_lm_dir, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "max_length": 4096}))
    request = ChatRequest(SHORT, sampling=SamplingParams(max_tokens=6))
    (drafted,) = HFBackend(str(tmp_path)).complete([request])
    assert "draft" in drafted.raw  # the drafted (ragged) decoder answered
    assert drafted.raw["token_ids"] == HFBackend(str(tiny_lm_dir)).complete(
        [request])[0].raw["token_ids"]


def test_the_context_is_max_position_embeddings_stretched_as_vllm_stretches_it() -> None:
    from types import SimpleNamespace

    from transformers import GPT2Config, LlamaConfig, Qwen2Config

    from agentworld_envs.backends.hf_loading import context_length

    yarn = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
              "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    configs = {64: GPT2Config(n_positions=64), 131072: Qwen2Config(max_position_embeddings=32768,
                                                                   rope_scaling=yarn),
               8192: LlamaConfig(max_position_embeddings=4096,
                                 rope_scaling={"type": "linear", "factor": 2.0}),
               131073: LlamaConfig(max_position_embeddings=131073, rope_scaling=llama3)}
    for length, config in configs.items():
        assert context_length(SimpleNamespace(config=config)) == length
    assert context_length(SimpleNamespace(config=SimpleNamespace())) is None


@pytest.mark.parametrize(("extra", "message"), [
    ({"temperature": 0.5}, "SamplingParams.extra sets ['temperature']: use SamplingParams' "),
    ({"max_new_tokens": 3, "do_sample": True}, "sets ['do_sample', 'max_new_tokens']: use"),
    ({"min_p": 0.99}, "sets ['min_p']: the hf backend samples with temperature, top_p and top_k"),
    ({"typical_p": 0.01}, "sets ['typical_p']: the hf backend samples with"),
])
def test_extra_settings_the_backend_would_clash_with_or_ignore_are_refused(
        tiny_lm_dir: Path, extra: dict, message: str) -> None:
    sampling = SamplingParams(max_tokens=4, temperature=1.0, seed=1, extra=extra)
    with pytest.raises(ValueError, match=re.escape(message)):
        HFBackend(str(tiny_lm_dir)).complete([ChatRequest(SHORT, sampling=sampling)])


def test_a_models_own_sampling_settings_are_dropped() -> None:
    from transformers import GenerationConfig

    own = GenerationConfig(do_sample=True, temperature=0.6, top_p=0.9, top_k=20, min_p=0.1)
    config = generation_config(own, SamplingParams(), 0)
    assert not needs_generate(config)  # nothing left for generate alone to apply
    assert (config.temperature, config.top_p, config.top_k, config.min_p) == (None,) * 4
    # a greedy request's filters change nothing: generate applies them only when sampling
    assert generation_config(GenerationConfig(), SamplingParams(extra={"min_p": 0.1}), 0).min_p


def test_a_temperature_below_vllms_epsilon_decodes_greedily(tiny_lm_dir: Path) -> None:
    """As vLLM's: below 1e-5 the answer is the greedy one (at 1e-39 the logits divided by the
    temperature overflowed, and sampling picked the lowest token ids)."""
    backend = HFBackend(str(tiny_lm_dir))
    greedy, cold = backend.complete([
        ChatRequest(SHORT, sampling=SamplingParams(temperature=t, max_tokens=8, seed=3))
        for t in (0.0, 1e-39)])
    assert cold.raw["token_ids"] == greedy.raw["token_ids"]
    assert cold.text == greedy.text
