"""Joint (simultaneous) updates: every agent is updated at once on one rollout per stage.

Each optimisation step sums all agents' PPO-clip losses (GRPO advantages) on a minibatch of
episodes, clips the gradient norm over the whole team and steps every agent's optimiser. Run:
``agentworld team train joint --help``.
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
from trainers.common.objectives import kl_summary
from trainers.common.team import Team, build_team
from trainers.common.updates import UpdateSettings, measure_kl, simultaneous_update

__all__ = ["Args", "train", "main", "monitor_team"]


@dataclass
class Args(TeamArgs):
    """Joint updates: all agents step together on the stage's one rollout."""


def monitor_team(args: TeamArgs, team: Team, batch: Any) -> dict[str, Any]:
    """Per-agent KL quantiles of the update just made on ``batch``, and the out-of-region share."""
    record: dict[str, Any] = {}
    outside = []
    for agent in range(team.n_agents):
        kl = kl_summary(measure_kl(team.policies[agent], batch.samples[agent]),
                        team.deltas[agent], args.kl_quantile)
        outside.append(kl["kl_checked"] > team.deltas[agent])
        record.update(agent_record(agent, kl, "trust_region"))
    record["trust_region/out_of_region_fraction"] = float(np.mean(outside))
    return record


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train with joint updates until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "joint"
    team = team or build_team(args)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        # ALGO LOGIC: one rollout, one simultaneous update of every agent.
        batch = team.collect(args.prompts_per_rollout, args.group_size)
        losses = simultaneous_update(team.policies, team.optimizers, batch, args.adv_clip,
                                     args.adv_std_ddof, settings, team.generator)
        return {"charts/team_reward": float(batch.rewards.mean()),
                "losses/policy_loss": losses["policy_loss"], **monitor_team(args, team, batch)}

    return run_stages(args, team, play_stage, lambda stage: args.rollout_episodes, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train joint"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
