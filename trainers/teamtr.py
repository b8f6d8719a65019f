"""TeamTR: sequential trust-region fine-tuning of a shared-context team, with fresh rollouts.

Method: docs/team_envs.md and the TeamTR reference (Xie et al., ICML 2026, as specified by the
reference document, not the public code release). Run: ``agentworld team train teamtr --help``.

Each stage picks an agent order; for every agent in turn, with the others frozen:

1. roll out the **current, partially updated** team (fresh rollouts, so the agent is judged on the
   contexts the already-updated agents now produce); with ``resample_every`` m > 1 (the paper's
   reduced-resampling ablation) only before every m-th update, the agents between reusing the
   latest rollout;
2. compute group-normalised advantages of the team reward, clipped to ±``adv_clip``;
3. update the agent with PPO-clip plus β_i·KL(π_old ‖ π) on its own message tokens;
4. check the ``kl_quantile`` quantile of the per-message KL against δ_i; when exceeded, multiply
   β_i by ``beta_growth`` and shrink the step (``backtrack``: halve it towards the old
   parameters, or restore and redo it), at most ``max_backtracks`` times.

It logs per-agent KL quantiles, accepted and rejected updates with the accepted per-message KL,
the team reward and the stale gap: the agent's accepted update scored on the stage-start (stale)
rollouts against the fresh ones.

Plug-and-play replacement: at ``replace_at_stage`` the agent ``replace_agent`` gets a new policy,
first distilled on the team's rollouts towards the incumbent until KL(incumbent ‖ newcomer) is
within ``stage0_delta`` (Stage-0 alignment); sequential updates then resume.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainers.common.args import ConfigError, TrustRegionArgs
from trainers.common.batch import RolloutBatch, Samples
from trainers.common.exact_gains import ExactGainProbe, exact_supported
from trainers.common.flags import parse_args
from trainers.common.loop import (
    StageHook,
    TrainResult,
    agent_record,
    budget_stages,
    check_budget,
    run_stages,
)
from trainers.common.objectives import message_advantages, surrogate_gain
from trainers.common.team import (
    Team,
    agent_order,
    build_team,
    check_same_vocabulary,
    make_optimizer,
    team_task,
)
from trainers.common.updates import (
    UpdateSettings,
    accumulate,
    message_log_ratios,
    trust_region_summary,
    trust_region_update,
)

__all__ = ["Args", "GainProbe", "train", "stage0_align", "replace_agent", "main"]


@dataclass
class Args(TrustRegionArgs):
    """TeamTR: fresh rollouts before every agent's update, and a per-agent KL trust region."""

    resample_every: int = 1
    """roll out the team afresh before every this-many-th agent update of a stage (1: before
    every update, TeamTR; larger: the reduced-resampling ablation, ceil(n / m) rollouts a stage;
    n or more: one rollout a stage, as KL-without-refresh)"""
    gain_eval_episodes: int = 0
    """probe (not counted in the budget; 0: off): measure each update's true gain in team reward
    on this many paired episodes (same problems and random numbers before and after), and score
    the update on held-out rollouts of this size from the stage-start and the current team"""
    exact_gains: bool = False
    """probe (not counted in the budget): each update's true gain and its gain at the stage-start
    occupancy, exactly, by enumeration (symbolic relay or compositional chains with window 1 and
    one-symbol messages)"""
    replace_agent: int = -1
    """plug-and-play: the agent to replace (-1: none)"""
    replace_at_stage: int = 0
    """plug-and-play: the stage at whose start the agent is replaced"""
    replacement_hidden_size: int = 0
    """plug-and-play, symbolic teams: the newcomer's hidden size (0: hidden_size)"""
    replacement_model: str = ""
    """plug-and-play, text teams: the newcomer's model; it must have the incumbent's tokenizer
    (Stage-0 scores the incumbent's tokens), else the replacement stops with an error saying so"""
    stage0_delta: float = 0.01
    """Stage-0 KL bound delta_0 on the mean KL(incumbent || newcomer) per message"""
    stage0_max_steps: int = 500
    """Stage-0 distillation steps at most"""
    stage0_learning_rate: float = 1e-2
    """Stage-0 distillation learning rate"""

    def validate(self) -> None:
        """Also check the TeamTR fields."""
        super().validate()
        if self.resample_every < 1:
            raise ConfigError("resample_every", f"must be at least 1, got {self.resample_every}")
        for name in ("gain_eval_episodes", "replace_at_stage",
                     "replacement_hidden_size", "stage0_max_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(name, f"must not be negative, got {getattr(self, name)}")
        # train() checks replace_agent against the team it builds (the env's size by default)
        if self.replace_agent < -1 or (self.n_agents and self.replace_agent >= self.n_agents):
            raise ConfigError("replace_agent", f"must be -1 or an agent index, "
                                               f"got {self.replace_agent}")
        for name in ("stage0_delta", "stage0_learning_rate"):
            if not getattr(self, name) > 0:
                raise ConfigError(name, f"must be positive, got {getattr(self, name)}")


def stage0_align(newcomer: Any, optimizer: torch.optim.Optimizer, samples: Samples,
                 delta0: float, max_steps: int) -> dict[str, float]:
    """Distil ``newcomer`` on the incumbent's messages until their KL is within ``delta0``.

    ``samples`` are the incumbent's messages from a team rollout, with the incumbent's
    log-probs. The loss is KL(incumbent ‖ newcomer) itself where the incumbent's full
    distributions were kept (symbolic teams), else the newcomer's negative log-likelihood of the
    incumbent's messages; both are minimised by matching the incumbent. The KL is measured per
    message as in the trust region. Both run in micro-batches of the newcomer's
    ``score_batch_size`` with gradient accumulation.

    Returns:
        The final mean per-message KL, the steps taken and whether the bound holds (with no
        message to distil on, an incumbent a router skipped, a KL of 0 after no step).
    """
    if not len(samples):
        return {"stage0/kl": 0.0, "stage0/steps": 0, "stage0/within_bound": 1.0}

    def loss_of(part: Samples, _: np.ndarray) -> tuple[torch.Tensor, dict[str, float]]:
        new_logp, kl = newcomer.score(part)
        loss = kl.mean() if part.old_dist is not None else -(
            new_logp * part.mask).sum(dim=1).mean()
        return loss, {"kl": float(kl.detach().mean())}

    rows = np.arange(len(samples))
    for step in range(max_steps + 1):
        optimizer.zero_grad(set_to_none=True)
        mean_kl = accumulate(newcomer, samples, rows, loss_of)["kl"]
        if mean_kl <= delta0 or step == max_steps:
            break
        optimizer.step()
    return {"stage0/kl": mean_kl, "stage0/steps": step,
            "stage0/within_bound": float(mean_kl <= delta0)}


def replace_agent(args: Args, team: Team, agent: int, stage: int) -> dict[str, float]:
    """Swap ``agent`` for a newcomer aligned by Stage-0 on a rollout of the current team."""
    spec = dict(team.policies[agent].spec())
    if "hidden_size" in spec:
        spec["hidden_size"] = args.replacement_hidden_size or args.hidden_size
    elif args.replacement_model:
        spec["model"] = args.replacement_model
    spec["seed"] = args.seed + 7919 * (stage + 1)
    newcomer = team.factory(agent, spec)
    check_same_vocabulary(team.policies[agent], newcomer)
    batch = team.collect(args.prompts_per_rollout, args.group_size)
    before = float(batch.rewards.mean())
    aligner = make_optimizer(newcomer, args.stage0_learning_rate, 0.0)
    record = stage0_align(newcomer, aligner, batch.samples[agent], args.stage0_delta,
                          args.stage0_max_steps)
    team.replace(agent, newcomer, args.kl_coef)
    return {**record, "stage0/agent": agent, "stage0/incumbent_team_reward": before}


def _gain(policy: Any, batch: RolloutBatch, agent: int) -> float:
    """The agent's current policy scored as a surrogate on ``batch`` (sampled before it changed)."""
    samples = batch.samples[agent]
    return surrogate_gain(message_log_ratios(policy, samples), samples.episode, batch)


class GainProbe:
    """Held-out measurements of each update in a stage (``gain_eval_episodes`` > 0).

    The training surrogates are in-sample: an update fitted to a batch looks better on it than it
    is. The probe scores each accepted update on held-out rollouts of the stage-start team
    (stale) and of the current team (fresh), and measures its true gain in team reward on paired
    evaluation episodes. None of it counts towards the budget.
    """

    def __init__(self, args: Args, team: Team, stage: int) -> None:
        self.args, self.team = args, team
        self.seed = args.seed * 100_003 + stage * 101
        self.stale = self._rollout(self.seed + 99)

    def _rollout(self, seed: int) -> RolloutBatch:
        size = self.args.gain_eval_episodes
        return self.team.sample(max(1, size // self.args.group_size), self.args.group_size, seed)

    def before(self, position: int) -> None:
        """Hold out a fresh rollout and measure the team before the agent's update."""
        self.paired_seed = self.seed + position
        self.fresh = self._rollout(self.paired_seed + 7)
        self.reward_before = self.team.evaluate(self.args.gain_eval_episodes, self.paired_seed)

    def after(self, agent: int) -> dict[str, float]:
        """The update's true gain and its held-out fresh and stale surrogates."""
        policy = self.team.policies[agent]
        reward_after = self.team.evaluate(self.args.gain_eval_episodes, self.paired_seed)
        return {"true_gain": reward_after - self.reward_before,
                "fresh_holdout": _gain(policy, self.fresh, agent),
                "stale_holdout": _gain(policy, self.stale, agent)}


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train a team with TeamTR until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "teamtr"
    # Without a team, read from the env alone: every setting is checked before a model loads.
    task = team_task(args) if team is None else getattr(team.rollouts, "task", None)
    n = task.n_agents if team is None else team.n_agents
    if args.exact_gains and not (task is not None and exact_supported(task)):
        raise ConfigError("exact_gains", f"{args.env_id} with {args.env_kwargs} cannot be "
                                         "enumerated: use a relay or compositional chain with "
                                         "window 1 and message_length 1")

    def stage_cost(stage: int) -> int:
        replacing = args.replace_agent >= 0 and stage == args.replace_at_stage
        return (-(-n // args.resample_every) + replacing) * args.rollout_episodes

    if args.replace_agent >= n:
        raise ConfigError("replace_agent", f"{args.replace_agent} is not an agent of this "
                                           f"{n}-agent team")
    check_budget(args, stage_cost)
    if args.replace_agent >= 0 and args.replace_at_stage >= budget_stages(
            stage_cost, args.total_episodes):
        raise ConfigError("replace_at_stage", f"stage {args.replace_at_stage} is past the last "
                                              f"one that {args.total_episodes} episodes pay for")
    team = team or build_team(args)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        record: dict[str, Any] = {}
        if args.replace_agent >= 0 and stage == args.replace_at_stage:
            record.update(replace_agent(args, team, args.replace_agent, stage))
        stage_start: RolloutBatch | None = None
        fresh: RolloutBatch | None = None
        rewards, results, stale_gaps = [], [], []
        probe = GainProbe(args, team, stage) if args.gain_eval_episodes else None
        exact = ExactGainProbe(task, team.policies) if args.exact_gains else None
        exact_bias = []
        for position, agent in enumerate(agent_order(args.order, n, team.rng)):
            # ALGO LOGIC: fresh rollouts of the partially updated team; only `agent` changes.
            if position % args.resample_every == 0:
                # old log-probs the sampling did not record are scored only where needed: an
                # agent's own by its update's first pass, the stage start's for the stale gap
                fresh = team.collect(args.prompts_per_rollout, args.group_size,
                                     defer_scoring=True)
                rewards.append(float(fresh.rewards.mean()))
            assert fresh is not None
            stage_start = stage_start or fresh
            samples = fresh.samples[agent]
            if stage_start is not fresh:  # scored before the agent's own update changes it
                team.score_old(agent, stage_start.samples[agent])
            advantages = message_advantages(fresh, agent, args.adv_clip, args.adv_std_ddof)
            if probe:
                probe.before(position)
            if exact:
                exact.before(team.policies)
            result = trust_region_update(
                team.policies[agent], team.optimizers[agent], samples, advantages, settings,
                team.generator, delta=team.deltas[agent], beta=team.betas[agent],
                quantile=args.kl_quantile, beta_growth=args.beta_growth,
                max_backtracks=args.max_backtracks, backtrack=args.backtrack)
            team.betas[agent] = result.beta
            results.append(result)
            record.update(agent_record(agent, {
                **result.kl, "beta": result.beta, "backtracks": result.backtracks,
                "accepted": float(result.accepted), "step_fraction": result.step_fraction,
                "delta": team.deltas[agent], "position": position}, "trust_region"))
            record.update(agent_record(agent, result.losses, "losses"))
            # Stale gap: the accepted update scored on stage-start vs fresh rollouts (on the
            # fresh ones, the trust-region check has already scored it).
            ratios = result.log_ratios
            if ratios is None:  # rejected: the restored policy, not the one checked last
                ratios = message_log_ratios(team.policies[agent], samples)
            gains = {"fresh": surrogate_gain(ratios, samples.episode, fresh)}
            gains["stale"] = (gains["fresh"] if stage_start is fresh
                              else _gain(team.policies[agent], stage_start, agent))
            if probe:
                gains.update(probe.after(agent))
            if exact:
                gains.update(exact.after(team.policies, agent))
                exact_bias.append(abs(gains["exact_stale_gain"] - gains["exact_true_gain"]))
            if position > 0:
                stale_gaps.append(abs(gains["stale"] - gains["fresh"]))
            record.update(agent_record(agent, gains, "surrogate"))
        record["charts/team_reward"] = float(np.mean(rewards))
        record.update(trust_region_summary(results))
        record["surrogate/stale_gap"] = float(np.sum(stale_gaps))
        if exact:
            record["surrogate/exact_stale_bias"] = float(np.sum(exact_bias))
        return record

    return run_stages(args, team, play_stage, stage_cost, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args = parse_args(Args, argv, prog="agentworld team train teamtr")
    result = train(args)
    logs = f"TensorBoard: {result.run_dir}" if result.run_dir else "TensorBoard off (--log-dir)"
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes "
          f"({logs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
