"""Deferred old log-probs: a TeamTR rollout in bfloat16 scores no message up front. An agent's
own messages take their old log-probs from its update's first pass (exactly what a scoring pass
gives, its micro-batches being the scoring pass's), the stage start's from one pass before the
agent's update (the stale gap), and the other agents' are never scored. Before, every rollout
scored every agent's messages: 9 passes a stage of 3 agents, where 2 are needed. The one-rollout
baselines (stale-sequential, KL without refresh) need none: each agent's own come from its
update."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.trainers.test_lm_bf16_ratios import wider_lm_dir  # noqa: F401 - a fixture
from trainers import kl_no_refresh, stale_sequential, teamtr
from trainers.common.team import Team, build_team
from trainers.common.updates import UpdateSettings, policy_update
from trainers.policies.lm import CausalLMPolicy

pytestmark = pytest.mark.filterwarnings("ignore:minibatches > 1 in bfloat16")


def _args(model_dir: Path, trainer: Any = teamtr, **changes: Any) -> Any:
    pytest.importorskip("peft")
    settings = dict(env_id="team_envs/arithmetic_chain-v0", n_agents=3, lora_rank=4,
                    model=str(model_dir), max_new_tokens=8, dtype="bfloat16", score_batch_size=4,
                    prompts_per_rollout=3, group_size=2, total_episodes=18, update_epochs=2,
                    eval_episodes=2, learning_rate=1e-2, log_dir="")
    return trainer.Args(**{**settings, **changes})


def _counted_scoring(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every scoring forward outside an update (no gradient), counted."""
    calls: list[int] = []
    token_logprobs = CausalLMPolicy.token_logprobs

    def counted(self, samples):
        if not torch.is_grad_enabled():
            calls.append(len(samples))
        return token_logprobs(self, samples)

    monkeypatch.setattr(CausalLMPolicy, "token_logprobs", counted)
    return calls


def _stage(trainer: Any, args: Any) -> tuple[list[torch.Tensor], dict[str, float]]:
    result = trainer.train(args)
    weights = [p.detach().clone() for policy in result.team.policies
               for p in policy.trainable_parameters()]
    record = {k: v for k, v in result.history[1].items()  # timings left out
              if not k.startswith("time/") and k != "charts/tokens_per_s"}
    return weights, record


@pytest.mark.parametrize(("trainer", "episodes", "saved"), [
    (teamtr, 18, 7),  # a stage: 3 rollouts of 3 agents, 9 passes up front, 2 needed
    (stale_sequential, 6, 3), (kl_no_refresh, 6, 3),  # one rollout a stage, every agent's own
])
def test_a_deferred_stage_trains_exactly_as_one_scored_up_front(
        trainer: Any, episodes: int, saved: int, wider_lm_dir: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    args = _args(wider_lm_dir, trainer, total_episodes=episodes)
    calls = _counted_scoring(monkeypatch)
    deferred = _stage(trainer, args)
    deferred_calls = list(calls)
    collect = Team.collect
    monkeypatch.setattr(Team, "collect", lambda self, prompts, group_size, **_: collect(
        self, prompts, group_size))  # every rollout scored up front, as before
    calls.clear()
    scored = _stage(trainer, dataclasses.replace(args))
    assert len(scored[0]) == len(deferred[0]) > 0
    for mine, theirs in zip(deferred[0], scored[0], strict=True):
        assert torch.equal(mine, theirs)
    assert deferred[1] == scored[1]
    assert len(calls) - len(deferred_calls) == saved


def test_several_minibatches_score_the_deferred_messages_before_the_first_step(
        wider_lm_dir: Path) -> None:  # noqa: F811
    args = _args(wider_lm_dir, minibatches=2)
    team = build_team(args)
    samples = team.collect(3, 2, defer_scoring=True).samples[1]
    assert samples.old_logp is None
    with torch.no_grad():
        expected = team.policies[1].token_logprobs(samples)
    policy_update(team.policies[1], team.optimizers[1], samples, torch.linspace(-1, 1, 6),
                  UpdateSettings(epochs=1, minibatches=2, clip=0.2, max_grad_norm=1.0),
                  torch.Generator().manual_seed(0))
    assert torch.equal(samples.old_logp, expected)


def test_what_is_deferred_and_what_is_not(tiny_lm_dir: Path, wider_lm_dir: Path) -> None:  # noqa: F811
    bf16 = build_team(_args(wider_lm_dir))
    assert all(s.old_logp is None for s in bf16.collect(3, 2, defer_scoring=True).samples)
    assert all(s.old_logp is not None for s in bf16.collect(3, 2).samples)
    # float32 records them while sampling; nothing is left to defer
    recorded = build_team(_args(tiny_lm_dir, dtype="float32"))
    batch = recorded.collect(3, 2, defer_scoring=True)
    assert all(torch.is_tensor(s.old_logp) for s in batch.samples)
    # one policy playing every agent changes with each agent's update: scored up front
    shared = build_team(_args(wider_lm_dir), shared=True)
    assert all(torch.is_tensor(s.old_logp)
               for s in shared.collect(3, 2, defer_scoring=True).samples)
    assert np.isfinite(bf16.clock["scoring_s"])
