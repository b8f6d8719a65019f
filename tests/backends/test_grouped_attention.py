"""Grouped key-value heads kept grouped in attention: the same logits as transformers' ``sdpa``
to the bit, on prefills with padding and on multi-position passes over a cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.backends.grouped_attention import NAME, group_attention_heads

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def load(folder: Path, attention: str = "sdpa") -> object:
    return transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation=attention).eval()


@pytest.mark.parametrize("seed", range(4))
def test_grouped_logits_equal_sdpa_under_padding_and_over_a_cache(tiny_lm_dir: Path,
                                                                  seed: int) -> None:
    plain, grouped = load(tiny_lm_dir), load(tiny_lm_dir)
    assert group_attention_heads(torch, grouped)
    assert grouped.config._attn_implementation == NAME
    generator = torch.Generator().manual_seed(seed)
    rows, length, more = 5, 37 + seed * 11, 1 + seed * 3
    ids = torch.randint(0, 300, (rows, length), generator=generator)
    mask = torch.ones_like(ids)
    for row in range(rows):  # left padding of different widths, one row unpadded
        mask[row, : (row * 7) % length] = 0
    later = torch.randint(0, 300, (rows, more), generator=generator)
    later_mask = torch.cat([mask, torch.ones_like(later)], dim=1)
    with torch.inference_mode():
        outputs = []
        for model in (plain, grouped):
            first = model(input_ids=ids, attention_mask=mask, use_cache=True)
            second = model(input_ids=later, attention_mask=later_mask, use_cache=True,
                           past_key_values=first.past_key_values)
            outputs.append((first.logits, second.logits))
    assert torch.equal(outputs[0][0], outputs[1][0])
    assert torch.equal(outputs[0][1], outputs[1][1])


def test_only_sdpa_models_with_grouped_heads_are_switched(tiny_lm_dir: Path) -> None:
    eager = load(tiny_lm_dir, "eager")
    assert not group_attention_heads(torch, eager)
    assert eager.config._attn_implementation == "eager"
    config = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=4, attn_implementation="sdpa")
    ungrouped = transformers.Qwen2ForCausalLM(config)
    assert not group_attention_heads(torch, ungrouped)


def test_the_hf_backend_runs_grouped_attention(tiny_lm_dir: Path) -> None:
    from agentworld_envs.backends import make_backend

    with make_backend({"name": "hf", "model": str(tiny_lm_dir)}) as backend:
        assert backend._model.config._attn_implementation == NAME
