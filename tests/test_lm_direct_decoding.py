"""``--generation direct``: the project's KV-cached decoder over the base's own weights and the
active agent's adapter gives ``generate``'s tokens and log-probs in float32 (greedy, sampled,
top-k/top-p, stop strings, left padding, two adapters on one base, a full fine-tune), and a
team plays the same rollouts either way."""

from __future__ import annotations

import math
from pathlib import Path

import pettingzoo
import pytest
import torch

from trainers import teamtr
from trainers.common.team import build_team
from trainers.policies.direct_decoding import DirectDecoding, _Decoder
from trainers.policies.lm import CausalLMPolicy

pytest.importorskip("peft")


def _observations(seeds: tuple[int, ...] = (1, 2, 3, 4)) -> list[dict]:
    """Prompts of different lengths, so that the batch is left-padded."""
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0")
    observations = []
    for seed in seeds:
        env.reset(seed=seed)
        observations.append(env.observe(env.agent_selection))
    return observations


def _team(tiny_lm_dir: Path, **settings) -> tuple[CausalLMPolicy, CausalLMPolicy]:
    """Two LoRA agents on one base; the first's adapter moved off its zero start."""
    first = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_0", **settings)
    second = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_1", base=first,
                            **settings)
    with torch.no_grad():
        for name, param in first.module.named_parameters():
            if "lora_B.agent_0" in name:
                param.copy_(torch.randn(param.shape, generator=torch.Generator().manual_seed(
                    len(name))) * 0.2)
    return first, second


def _both(policy: CausalLMPolicy, observations: list[dict], greedy: bool) -> tuple:
    """The messages of ``generate`` and of direct decoding, drawn with the same seed."""
    messages = []
    for engine in (None, DirectDecoding()):
        policy.engine = engine
        messages.append(policy.generate(observations, torch.Generator().manual_seed(5),
                                        greedy=greedy))
    policy.engine = None
    return tuple(messages)


@pytest.mark.parametrize("sampling", [
    {"greedy": True},
    {"greedy": False},
    {"greedy": False, "temperature": 0.7, "top_k": 7, "top_p": 0.8},
])
def test_direct_decoding_gives_generates_tokens_and_log_probs(tiny_lm_dir: Path,
                                                              sampling: dict) -> None:
    settings = {k: v for k, v in sampling.items() if k != "greedy"}
    observations = _observations()
    for policy in _team(tiny_lm_dir, max_new_tokens=12, **settings):
        assert len({len(policy.encode_prompt(o)) for o in observations}) > 1  # left-padded
        expected, direct = _both(policy, observations, sampling["greedy"])
        assert direct.response_ids == expected.response_ids
        assert direct.texts == expected.texts
        if sampling["greedy"]:
            assert direct.logprobs is None and expected.logprobs is None
        else:
            for got, want in zip(direct.logprobs, expected.logprobs, strict=True):
                assert got == pytest.approx(want, abs=1e-5)


def test_the_two_adapters_decode_differently(tiny_lm_dir: Path) -> None:
    """The decoder applies the active agent's adapter, not the other one's or none."""
    moved, fresh = _team(tiny_lm_dir, max_new_tokens=12)
    observations = _observations()
    moved.engine = fresh.engine = DirectDecoding()
    one = moved.generate(observations, torch.Generator().manual_seed(5), greedy=True)
    other = fresh.generate(observations, torch.Generator().manual_seed(5), greedy=True)
    assert one.response_ids != other.response_ids


def test_direct_decoding_ends_at_stop_strings_and_end_tokens_as_generate(
        tiny_lm_dir: Path) -> None:
    free = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=16)
    observations = _observations()
    full = free.generate(observations, torch.Generator().manual_seed(3))
    stops = sorted({text[len(text) // 2:len(text) // 2 + 2] for text in full.texts
                    if len(text) > 6} - {""})[:2]
    assert stops
    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=16, stop=stops)
    expected, direct = _both(policy, observations, greedy=False)
    assert direct.response_ids == expected.response_ids
    assert direct.texts == expected.texts
    assert any(len(r) < 16 for r in direct.response_ids)  # some row ended early


def test_a_full_fine_tune_decodes_as_generate(tiny_lm_dir: Path) -> None:
    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8)
    expected, direct = _both(policy, _observations(), greedy=False)
    assert direct.response_ids == expected.response_ids


def test_bfloat16_logits_are_as_close_to_float32_as_generates(tiny_lm_dir: Path) -> None:
    """bf16 rounds otherwise in every kernel: the decoder's prefill logits are no further from
    the float32 model's than transformers' own bf16 forward pass is."""
    reference = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4)
    half = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, dtype="bfloat16")
    prompt = torch.tensor([reference.encode_prompt(_observations((1,))[0])])
    positions = torch.arange(prompt.shape[1])[None]
    with torch.no_grad():
        exact = reference.module(input_ids=prompt).logits[0, -1].float()
        transformers_bf16 = half.module(input_ids=prompt).logits[0, -1].float()
        decoder = _Decoder(half.module, half.adapter)
        cache = [tuple(torch.zeros((1, decoder.kv_heads, prompt.shape[1], decoder.head_dim),
                                   dtype=torch.bfloat16) for _ in range(2))
                 for _ in decoder.layers]
        mask = torch.ones((prompt.shape[1], prompt.shape[1]), dtype=torch.bool).tril()[None]
        direct_bf16 = decoder.forward(prompt, positions, mask, cache, 0)[0]
    assert float((transformers_bf16 - exact).abs().max()) > 0  # bf16 does round
    assert float((direct_bf16 - exact).abs().max()) <= 2 * float(
        (transformers_bf16 - exact).abs().max())


def test_another_architecture_is_refused_with_the_way_out() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=32))
    with pytest.raises(ValueError, match="gpt2.*--generation transformers"):
        _Decoder(model, None)


def test_a_team_plays_the_same_rollouts_with_either_generation_and_trains(
        tiny_lm_dir: Path) -> None:
    """The rollouts of a two-agent team are the same, with the same old log-probs (up to
    float error: every weight moves on such noise when all rewards are equal, so the trained
    weights are not compared), and a stage trains with direct decoding."""
    args = {"env_id": "team_envs/countdown-v0", "n_agents": 2, "model": str(tiny_lm_dir),
            "lora_rank": 4, "max_new_tokens": 6, "temperature": 0.8, "top_k": 20,
            "prompts_per_rollout": 2, "group_size": 2, "total_episodes": 8, "eval_episodes": 2,
            "update_epochs": 1, "log_dir": "", "delta": 1e3}
    batches = {generation: build_team(teamtr.Args(**args, generation=generation)).collect(2, 2)
               for generation in ("transformers", "direct")}
    for before, after in zip(batches["transformers"].samples, batches["direct"].samples,
                             strict=True):
        assert after.payload.response_ids == before.payload.response_ids
        assert torch.allclose(after.old_logp, before.old_logp, atol=1e-4)
    result = teamtr.train(teamtr.Args(**args, generation="direct"))
    assert all(isinstance(p.engine, DirectDecoding) for p in result.team.policies)
    assert result.team.collections == 2
    assert all(math.isfinite(v) for v in result.history[1].values() if isinstance(v, float))
