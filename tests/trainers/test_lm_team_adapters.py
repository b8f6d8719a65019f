"""LM teams on one base with an adapter per agent, heterogeneous teams (--models), and
replacement across tokenizers."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.flags import parse_args
from trainers.common.team import build_team
from trainers.common.updates import UpdateSettings, policy_update
from trainers.policies.lm import CausalLMPolicy

pytest.importorskip("peft")


def _args(model: str = "", **changes) -> teamtr.Args:
    settings = dict(env_id="team_envs/countdown-v0", n_agents=3, model=model, lora_rank=4,
                    max_new_tokens=4, prompts_per_rollout=2, group_size=2, total_episodes=12,
                    eval_episodes=2, log_dir="", delta=1e3, learning_rate=5e-2)
    return teamtr.Args(**{**settings, **changes})


def _storages(parameters) -> set[int]:
    return {p.untyped_storage().data_ptr() for p in parameters}


def test_a_lora_team_holds_its_base_once_with_an_adapter_per_agent(tiny_lm_dir: Path) -> None:
    team = build_team(_args(str(tiny_lm_dir)))
    module = team.policies[0].module
    assert all(p.module is module for p in team.policies)
    assert sorted(module.peft_config) == ["agent_0", "agent_1", "agent_2"]
    named = dict(module.named_parameters())
    base = _storages(p for n, p in named.items() if "lora_" not in n)
    adapters = [_storages(p.trainable_parameters()) for p in team.policies]
    held = _storages(p for policy in team.policies for p in policy.module.parameters())
    assert len(held) == len(base) + sum(map(len, adapters))  # the base once, three adapters
    assert not set.intersection(*adapters) and not base & set.union(*adapters)
    for agent, (policy, optimizer) in enumerate(zip(team.policies, team.optimizers,
                                                     strict=True)):
        mine = {id(p) for p in policy.trainable_parameters()}
        assert {id(p) for group in optimizer.param_groups for p in group["params"]} == mine
        assert all(f".agent_{agent}." in n for n, p in named.items() if id(p) in mine)
    assert not team.shared and len({id(o) for o in team.optimizers}) == 3


def test_an_agents_update_leaves_the_others_adapters_and_the_base_bit_identical(
        tiny_lm_dir: Path) -> None:
    team = build_team(_args(str(tiny_lm_dir)))
    batch = team.collect(2, 2)
    module = team.policies[0].module
    before = {n: p.detach().clone() for n, p in module.named_parameters()}
    samples = batch.samples[1]
    samples.old_logp = samples.old_logp - 0.1 * samples.mask  # a ratio away from 1
    advantages = torch.linspace(-1.0, 1.0, len(samples))
    policy_update(team.policies[1], team.optimizers[1], samples, advantages,
                  UpdateSettings(2, 1, 0.2, 1.0), torch.Generator().manual_seed(0), beta=0.1)
    changed = {n for n, p in module.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all("lora_" in n and ".agent_1." in n for n in changed)


def _other_vocabulary(tiny_lm_dir: Path, directory: Path) -> Path:
    from transformers import AutoTokenizer

    shutil.copytree(tiny_lm_dir, directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.add_tokens(["<only_here>"])
    tokenizer.save_pretrained(directory)
    return directory


def test_models_gives_each_agent_its_own_model(tiny_lm_dir: Path, tmp_path: Path) -> None:
    assert parse_args(teamtr.Args, ["--models", "a,b,c"]).models == ["a", "b", "c"]
    other = shutil.copytree(tiny_lm_dir, tmp_path / "other")
    team = build_team(_args(models=[str(tiny_lm_dir), str(other), str(tiny_lm_dir)]))
    first, second, third = team.policies
    assert first.module is third.module and second.module is not first.module
    assert [p.model_name for p in team.policies] == [str(tiny_lm_dir), str(other),
                                                    str(tiny_lm_dir)]
    assert team.collect(2, 2).episodes == 4
    with pytest.raises(ConfigError, match="models: 2 models for 3 agents"):
        build_team(_args(models=[str(tiny_lm_dir)] * 2))
    with pytest.raises(ConfigError, match="not both"):
        build_team(_args(str(tiny_lm_dir), models=[str(tiny_lm_dir)] * 3))


def test_a_replacement_on_the_shared_base_gets_a_fresh_adapter(tiny_lm_dir: Path) -> None:
    args = _args(str(tiny_lm_dir), n_agents=2, replace_agent=1, total_episodes=12,
                 stage0_max_steps=2)
    result = teamtr.train(args)
    team = result.team
    assert team.policies[1].adapter not in ("agent_0", "agent_1")
    assert team.policies[1].module is team.policies[0].module
    # The incumbent's adapter is unloaded: the shared model holds the two agents' only.
    assert sorted(team.policies[0].module.peft_config) == sorted(
        ["agent_0", team.policies[1].adapter])
    assert not any(".agent_1." in name for name, _ in team.policies[0].module.named_parameters())
    assert "stage0/kl" in result.history[1] and np.isfinite(result.history[1]["stage0/kl"])


def test_a_replacement_with_another_tokenizer_says_why_it_cannot(tiny_lm_dir: Path,
                                                                 tmp_path: Path) -> None:
    other = _other_vocabulary(tiny_lm_dir, tmp_path / "other_vocab")
    args = _args(str(tiny_lm_dir), n_agents=2, replace_agent=0,
                 replacement_model=str(other))
    with pytest.raises(ValueError, match="another tokenizer than the incumbent"):
        teamtr.train(args)


def test_the_answerers_messages_start_with_the_answer_prefix(tiny_lm_dir: Path) -> None:
    """``--answer-prefix`` is a prefill for the last agent only: its prompt ends with the
    prefix's tokens (so they are scored as context, not as the message), and the text the env
    reads starts with it; the other agents are untouched."""
    team = build_team(_args(str(tiny_lm_dir), answer_prefix="ANSWER:"))
    plain = build_team(_args(str(tiny_lm_dir)))
    assert [p.response_prefix for p in team.policies] == ["", "", "ANSWER:"]
    answerer, other = team.policies[-1], team.policies[0]
    observation = {"system": "You are the answerer.", "text": "Calculate 2 + 3."}
    prefix = answerer.tokenizer("ANSWER:", add_special_tokens=False)["input_ids"]
    prompt = answerer.encode_prompt(observation)
    assert prompt[-len(prefix):] == prefix
    assert prompt[:-len(prefix)] == plain.policies[-1].encode_prompt(observation)
    assert other.encode_prompt(observation) == plain.policies[0].encode_prompt(observation)
    messages = answerer.generate([observation] * 2, torch.Generator().manual_seed(0))
    assert all(text.startswith("ANSWER:") for text in messages.texts)
    assert all(p[-len(prefix):] == prefix for p in messages.prompt_ids)
    batch = team.collect(2, 2)
    answers = batch.samples[2].payload.texts
    assert answers and all(text.startswith("ANSWER:") for text in answers)
    assert not any(t.startswith("ANSWER:") for t in batch.samples[0].payload.texts)


def test_a_shared_policy_prefills_the_answerers_messages_only(tiny_lm_dir: Path) -> None:
    """Single-agent fine-tuning (one policy for every role) keeps the answerer's prefill: the
    roles are views of one policy (one set of weights, one optimiser), the last with the
    prefix."""
    team = build_team(_args(str(tiny_lm_dir), answer_prefix="ANSWER:"), shared=True)
    assert team.shared and len({id(o) for o in team.optimizers}) == 1
    assert [p.response_prefix for p in team.policies] == ["", "", "ANSWER:"]
    assert len({id(p.module) for p in team.policies}) == 1
    batch = team.collect(2, 2)
    assert all(text.startswith("ANSWER:") for text in batch.samples[2].payload.texts)
    assert not any(t.startswith("ANSWER:") for t in batch.samples[0].payload.texts)


def test_making_adapters_shows_no_deprecation_warning_from_peft(tiny_lm_dir: Path) -> None:
    """peft reads transformers' deprecated ``is_gradient_checkpointing`` for every adapter;
    that warning is not the user's to act on, so it is not shown."""
    import warnings

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        first = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_0")
        CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_1", base=first)
    assert not [w for w in shown if "is_gradient_checkpointing" in str(w.message)]
