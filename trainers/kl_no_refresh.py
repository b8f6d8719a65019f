"""KL penalty without refresh: TeamTR's per-agent trust-region update on stale rollouts.

The ablation that isolates TeamTR's resampling. Every agent takes exactly TeamTR's step
(PPO-clip plus beta_i * KL on its own message tokens, the KL-quantile check against delta_i,
the same backtracking with beta_i * beta_growth), but all agents of a stage reuse the one
stage-start rollout instead of sampling the partially updated team afresh. Run:
``agentworld team train kl_no_refresh --help``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainers.common.args import TrustRegionArgs
from trainers.common.flags import parse_args
from trainers.common.loop import StageHook, TrainResult, agent_record, run_stages
from trainers.common.objectives import message_advantages
from trainers.common.team import Team, agent_order, build_team
from trainers.common.updates import UpdateSettings, trust_region_summary, trust_region_update

__all__ = ["Args", "train", "main"]


@dataclass
class Args(TrustRegionArgs):
    """KL penalty, no refresh: TeamTR's trust-region step, all agents on stage-start rollouts."""


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "kl_no_refresh"
    team = team or build_team(args)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        # ALGO LOGIC: one rollout per stage; the KL trust region but no fresh rollouts (each
        # agent's old log-probs, where sampling did not record them, from its update's pass).
        batch = team.collect(args.prompts_per_rollout, args.group_size, defer_scoring=True)
        record: dict[str, Any] = {"charts/team_reward": float(batch.rewards.mean())}
        results = []
        for agent in agent_order(args.order, team.n_agents, team.rng):
            result = trust_region_update(
                team.policies[agent], team.optimizers[agent], batch.samples[agent],
                message_advantages(batch, agent, args.adv_clip, args.adv_std_ddof), settings,
                team.generator,
                delta=team.deltas[agent], beta=team.betas[agent], quantile=args.kl_quantile,
                beta_growth=args.beta_growth, max_backtracks=args.max_backtracks,
                backtrack=args.backtrack)
            team.betas[agent] = result.beta
            results.append(result)
            record.update(agent_record(agent, {
                **result.kl, "beta": result.beta, "backtracks": result.backtracks,
                "accepted": float(result.accepted), "step_fraction": result.step_fraction},
                "trust_region"))
            record.update(agent_record(agent, result.losses, "losses"))
        record.update(trust_region_summary(results))
        return record

    return run_stages(args, team, play_stage, lambda stage: args.rollout_episodes, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train kl_no_refresh"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
