"""A NaN team reward (or log-prob, or KL) stops a team trainer before any weight turns NaN."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import torch

from trainers.common.team import Team, build_team

TRAINERS = ["teamtr", "kl_no_refresh", "stale_sequential", "joint", "single_agent_grpo", "happo"]
SETTINGS = {"n_agents": 2, "env_kwargs": {"vocab_size": 3}, "prompts_per_rollout": 8,
            "total_episodes": 2 * 32, "log_dir": "", "eval_episodes": 16}


def params(team: Team) -> list[torch.Tensor]:
    return [torch.cat([p.detach().flatten() for p in policy.module.parameters()])
            for policy in team.policies]


@pytest.mark.parametrize("name", TRAINERS)
def test_a_nan_reward_stops_training_with_every_weight_unchanged(name: str) -> None:
    """Before: the baselines stepped on NaN gradients and finished with every weight NaN (the
    NaN KL even counted as inside the trust region); TeamTR rejected every update, raising β."""
    module = importlib.import_module(f"trainers.{name}")
    args = module.Args(**SETTINGS)
    team = build_team(args, shared=name == "single_agent_grpo")
    collect = team.collect

    def nan_reward(prompts: int, group_size: int, **options: Any):
        batch = collect(prompts, group_size, **options)
        batch.rewards[0] = np.nan  # as a broken reward function may return
        return batch

    team.collect = nan_reward
    start = params(team)
    with pytest.raises(FloatingPointError, match="agent [01]: the update's loss is nan"):
        module.train(args, team=team)
    assert all(torch.equal(a, b) for a, b in zip(start, params(team), strict=True))
    assert team.betas == [args.kl_coef] * 2


def test_the_console_script_reports_a_non_finite_loss_in_one_line() -> None:
    from agentworld_envs.cli import _expected

    assert _expected(FloatingPointError("agent 0: the update's loss is nan")) == (
        1, "error: agent 0: the update's loss is nan")
