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

from trainers import joint
from trainers.common.args import TeamArgs
from trainers.common.flags import parse_args
from trainers.common.loop import StageHook, TrainResult
from trainers.common.team import Team, build_team

__all__ = ["Args", "train", "main"]


@dataclass
class Args(TeamArgs):
    """Single-agent GRPO: one shared policy for every role."""


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train one shared policy until ``total_episodes`` rollout episodes are used.

    ALGO LOGIC: joint updates (one rollout, GRPO on every message) of a team whose agents all
    share one policy, so the update is single-agent GRPO over every role's messages.
    """
    args.exp_name = args.exp_name or "single_agent_grpo"
    return joint.train(args, team or build_team(args, shared=True), on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train single_agent_grpo"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
