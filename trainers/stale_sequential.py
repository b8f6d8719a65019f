"""Stale sequential fine-tuning: one rollout per stage, reused by every agent in turn.

The baseline TeamTR criticises. Each stage rolls the team out once; then each agent, in the
stage's order, takes a PPO-clip step (GRPO advantages, no KL term) on those stage-start
rollouts, although the agents updated before it have already changed the contexts it will see.
On one fixed batch each agent's loss depends only on its own weights, so this is the joint
update run one agent at a time. Run: ``agentworld team train stale_sequential --help``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainers.common.args import TeamArgs
from trainers.common.flags import parse_args
from trainers.common.loop import StageHook, TrainResult, agent_record, run_stages
from trainers.common.objectives import kl_summary, message_advantages
from trainers.common.team import Team, agent_order, build_team
from trainers.common.updates import UpdateSettings, measure_kl, policy_update

__all__ = ["Args", "train", "main"]


@dataclass
class Args(TeamArgs):
    """Stale sequential: per-agent PPO-clip updates, all on the stage-start rollouts."""


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train with stale sequential updates until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "stale_sequential"
    team = team or build_team(args)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        # ALGO LOGIC: the stage's only rollout, reused by every agent (each agent's old
        # log-probs, where sampling did not record them, come from its update's first pass).
        batch = team.collect(args.prompts_per_rollout, args.group_size, defer_scoring=True)
        record: dict[str, Any] = {"charts/team_reward": float(batch.rewards.mean())}
        outside = []
        for agent in agent_order(args.order, team.n_agents, team.rng):
            samples = batch.samples[agent]
            advantages = message_advantages(batch, agent, args.adv_clip, args.adv_std_ddof)
            losses = policy_update(team.policies[agent], team.optimizers[agent], samples,
                                   advantages, settings, team.generator)
            kl = kl_summary(measure_kl(team.policies[agent], samples), team.deltas[agent],
                            args.kl_quantile)
            outside.append(kl["kl_checked"] > team.deltas[agent])
            record.update(agent_record(agent, kl, "trust_region"))
            record.update(agent_record(agent, losses, "losses"))
        record["trust_region/out_of_region_fraction"] = float(np.mean(outside))
        return record

    return run_stages(args, team, play_stage, lambda stage: args.rollout_episodes, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train stale_sequential"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
