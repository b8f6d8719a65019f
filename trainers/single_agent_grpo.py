"""Single-agent GRPO: one policy plays every role and is fine-tuned on all the team's messages.

The "one model instead of a team" baseline. Symbolic teams get one MLP whose input also holds
the agent's index; text teams get one causal LM, whose role comes from the system prompt. Each
stage rolls out once and takes GRPO (PPO-clip, group-normalised advantages) steps over every
message. Run: ``agentworld team train single_agent_grpo --help``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainers.common.args import TeamArgs, parse_args
from trainers.common.loop import StageHook, TrainResult, run_stages
from trainers.common.team import Team, build_team
from trainers.common.updates import UpdateSettings, simultaneous_update
from trainers.joint import monitor_team

__all__ = ["Args", "train", "main"]


@dataclass
class Args(TeamArgs):
    """Single-agent GRPO: one shared policy for every role."""


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train one shared policy until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "single_agent_grpo"
    team = team or build_team(args, shared=True)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        # ALGO LOGIC: one rollout; GRPO on every message of the shared policy.
        batch = team.collect(args.prompts_per_rollout, args.group_size)
        losses = simultaneous_update(team.policies, team.optimizers, batch, args.adv_clip,
                                     settings, team.generator)
        return {"charts/team_reward": float(batch.rewards.mean()),
                "losses/policy_loss": losses["policy_loss"], **monitor_team(args, team, batch)}

    return run_stages(args, team, play_stage, lambda stage: args.rollout_episodes, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train single_agent_grpo"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
