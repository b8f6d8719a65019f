"""An empty stop string is ignored by a language-model policy, as the CLI's list drops it."""

from __future__ import annotations

from pathlib import Path

import pettingzoo
import pytest
import torch

from trainers.policies.lm import CausalLMPolicy

pytest.importorskip("transformers")


def test_an_empty_stop_string_does_not_end_every_message_at_its_first_token(
        tiny_lm_dir: Path) -> None:
    """"" is in every text: the stopping criterion ended each message after one token, while
    the text cut ignored it (no stop found), so the messages were silently one token long."""
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    observations = []
    for seed in (1, 2, 3):
        env.reset(seed=seed)
        observations.append(env.observe("agent_0"))
    plain, empty = (CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8, stop=stop)
                    for stop in ((), ("", "")))
    assert empty.stop == ()
    first, second = (policy.generate(observations, torch.Generator().manual_seed(3))
                     for policy in (plain, empty))
    assert [len(r) for r in first.response_ids] == [8, 8, 8]  # none ends early unasked
    assert second.response_ids == first.response_ids and second.texts == first.texts
