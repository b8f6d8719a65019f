"""A Hugging Face tokenizer encodes any observation text, lone surrogates included."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym

import floor_tasks  # noqa: F401 - registers AgentFloor/<ID>-v0
from agentworld_envs.wrappers import TokenizeObservation


def test_an_echoed_lone_surrogate_is_tokenized_as_the_byte_tokenizer_reads_it(
        tiny_lm_dir: Path) -> None:
    """Before, the floor tools echoed an unknown tool name holding a lone surrogate and the
    Hugging Face tokenizer raised TypeError inside ``step``."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    env = TokenizeObservation(gym.make("AgentFloor/C3-v0"), max_length=512,
                              tokenizer=str(tiny_lm_dir))
    env.reset(seed=0, options={"variant": "v0"})
    raw = gym.make("AgentFloor/C3-v0")
    raw.reset(seed=0, options={"variant": "v0"})
    action = json.dumps({"name": "lookup_record\ud800", "arguments": {}}, ensure_ascii=False)
    echoed = raw.step(action)[0]
    assert "\ud800" in echoed  # the observation carries the agent's lone surrogate
    obs = env.step(action)[0]
    replaced = echoed.replace("\ud800", "?")
    expected = tokenizer(replaced, add_special_tokens=False)["input_ids"][:512]
    assert obs in env.observation_space
    assert (obs[:len(expected)] - 1).tolist() == expected and not obs[len(expected):].any()
