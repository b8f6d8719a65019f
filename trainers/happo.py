"""HAPPO-style sequential updates: stale rollouts, reweighted by the earlier agents' changes.

As in HARL's HAPPO, each stage rolls out once and updates the agents one at a time in a random
(or static) order. Agent i's PPO-clip surrogate is multiplied, outside the clip, by a factor M:
the product over the agents updated before it of their new/old probability ratios on the same
episodes (here, per episode: the ratio of all their messages in it). M corrects for the earlier
agents' changed *actions*, not for the contexts those changes would produce, and its variance
grows with message length. Run: ``agentworld team train happo --help``.

Two deliberate departures from HARL's HAPPO:

- **Advantages are GRPO's, not a centralised critic's with GAE.** Each message gets its
  episode's group-normalised team reward (``group_size`` episodes per problem), as in every
  trainer here. The team reward arrives once, at the end of an episode, the text teams have no
  global state to give a critic, and a value model beside each LM would cost as much as the
  policy; sharing the baseline keeps the comparison between trainers about the update scheme
  alone, at a matched rollout budget.
- **log M is clamped to ±20** (M within about 2e-9 to 5e8) before it weights the surrogate;
  HARL does not clamp it. Here log M sums the token log-ratios of every message the earlier
  agents wrote in the episode, which for LM messages can pass the ~88 where ``exp`` overflows
  float32 and turn the loss into inf or NaN. It is the bound every message ratio has here;
  factors inside it are unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainers.common.args import TeamArgs
from trainers.common.flags import parse_args
from trainers.common.loop import StageHook, TrainResult, agent_record, run_stages
from trainers.common.objectives import episode_log_ratio, kl_summary, message_advantages
from trainers.common.team import Team, agent_order, build_team
from trainers.common.updates import UpdateSettings, log_ratios_and_kl, policy_update

__all__ = ["Args", "train", "main"]

_FACTOR_CLAMP = 20.0


@dataclass
class Args(TeamArgs):
    """HAPPO-style: sequential PPO-clip on one rollout, weighted by earlier agents' ratios."""


def train(args: Args, team: Team | None = None, on_stage_end: StageHook | None = None
          ) -> TrainResult:
    """Train with HAPPO-style updates until ``total_episodes`` rollout episodes are used."""
    args.exp_name = args.exp_name or "happo"
    team = team or build_team(args)
    settings = UpdateSettings.from_args(args)

    def play_stage(stage: int) -> dict[str, Any]:
        batch = team.collect(args.prompts_per_rollout, args.group_size)
        record: dict[str, Any] = {"charts/team_reward": float(batch.rewards.mean())}
        log_factor = torch.zeros(batch.episodes)
        outside = []
        for agent in agent_order(args.order, team.n_agents, team.rng):
            samples = batch.samples[agent]
            # ALGO LOGIC: the compounding importance factor M of the agents updated so far.
            factor = log_factor.clamp(-_FACTOR_CLAMP, _FACTOR_CLAMP).exp()
            advantages = message_advantages(batch, agent, args.adv_clip, args.adv_std_ddof)
            losses = policy_update(team.policies[agent], team.optimizers[agent], samples,
                                   advantages, settings, team.generator,
                                   weights=factor[samples.episode])
            log_ratios, kl_values = log_ratios_and_kl(team.policies[agent], samples)
            log_factor += episode_log_ratio(log_ratios, samples.episode, batch.episodes)
            kl = kl_summary(kl_values, team.deltas[agent], args.kl_quantile)
            outside.append(kl["kl_checked"] > team.deltas[agent])
            record.update(agent_record(agent, {**kl, "factor_mean": float(factor.mean()),
                                               "factor_max": float(factor.max())},
                                       "trust_region"))
            record.update(agent_record(agent, losses, "losses"))
        record["trust_region/out_of_region_fraction"] = float(np.mean(outside))
        return record

    return run_stages(args, team, play_stage, lambda stage: args.rollout_episodes, on_stage_end)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    result = train(parse_args(Args, argv, prog="agentworld team train happo"))
    print(f"final team reward {result.final_eval:.3f} after {result.team.episodes} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
