"""Baselines in the same code: stale sequential, KL without refresh, joint, single-agent, HAPPO."""

from __future__ import annotations

import importlib

import pytest
import torch

from trainers.common.team import Team, build_team

BASELINES = ["stale_sequential", "kl_no_refresh", "joint", "single_agent_grpo", "happo"]
SETTINGS = {"n_agents": 3, "env_kwargs": {"vocab_size": 3, "credit": "steps"},
            "prompts_per_rollout": 32, "total_episodes": 3 * 128, "log_dir": "",
            "eval_episodes": 256, "learning_rate": 1e-2}


def params(team: Team) -> list[torch.Tensor]:
    return [torch.cat([p.detach().flatten() for p in policy.module.parameters()])
            for policy in team.policies]


@pytest.mark.parametrize("name", BASELINES)
def test_baseline_uses_one_rollout_per_stage_and_updates_the_team(name: str) -> None:
    module = importlib.import_module(f"trainers.{name}")
    args = module.Args(**SETTINGS)
    team = build_team(args, shared=name == "single_agent_grpo")
    start = params(team)
    result = module.train(args, team=team)
    stages = [r for r in result.history if "charts/team_reward" in r]
    assert len(stages) == team.collections == 3 and team.episodes == 3 * 128
    assert all(not torch.equal(a, b) for a, b in zip(start, params(team), strict=True))
    for agent in range(3):
        assert f"trust_region/agent_{agent}/kl_q99" in stages[0]
    assert 0 <= stages[0]["trust_region/out_of_region_fraction"] <= 1
    assert result.final_eval == pytest.approx(result.history[-1]["charts/final_eval"])


def test_single_agent_grpo_shares_one_network_across_roles() -> None:
    module = importlib.import_module("trainers.single_agent_grpo")
    result = module.train(module.Args(**SETTINGS))
    team = result.team
    assert team.shared and len({id(o) for o in team.optimizers}) == 1
    assert team.policies[0].module is team.policies[2].module


def test_happo_reweights_later_agents_by_earlier_updates() -> None:
    module = importlib.import_module("trainers.happo")
    record = module.train(module.Args(**SETTINGS, order="static")).history[1]
    assert record["trust_region/agent_0/factor_mean"] == 1.0
    assert record["trust_region/agent_0/factor_max"] == 1.0
    assert record["trust_region/agent_2/factor_max"] != 1.0


def test_kl_no_refresh_keeps_the_trust_region() -> None:
    module = importlib.import_module("trainers.kl_no_refresh")
    result = module.train(module.Args(**{**SETTINGS, "delta": 1e-9, "max_backtracks": 0}))
    record = result.history[1]
    assert record["trust_region/out_of_region_fraction"] == 1.0
    assert result.team.betas == pytest.approx([1e-3 * 1.5 ** 3] * 3)


def test_joint_and_stale_see_the_same_stage_start_batch() -> None:
    """On one fixed batch both start from identical data: same first-stage team reward."""
    rewards = []
    for name in ("joint", "stale_sequential"):
        module = importlib.import_module(f"trainers.{name}")
        rewards.append(module.train(module.Args(**SETTINGS)).history[1]["charts/team_reward"])
    assert rewards[0] == rewards[1]
