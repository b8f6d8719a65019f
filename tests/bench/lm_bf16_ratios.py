"""How far from 1 a bfloat16 update's ratios are before its first step, on the embedded base.

``python -m tests.bench.lm_bf16_ratios [PROMPTS GROUP_SIZE SCORE_BATCH_SIZE]`` (4 4 4 unless
given) rolls out a 3-agent SmolLM2-135M team in bfloat16,
scores agent 1's messages' old log-probs as the trainers do, and then takes the message
log-ratios an update's first pass would see at zero update, in three ways:

* ``shuffled``: micro-batches of ``score_batch_size`` messages in the epoch's random order, as
  updates drew them before their rows were taken in order;
* ``update``: a one-minibatch pass as :func:`trainers.common.updates.accumulate` runs it now;
* ``minibatches=4``: each of four minibatches as its own pass (fewer rows than the scoring
  pass's).

Each prints the largest and mean absolute message log-ratio and the share of messages beyond
PPO's clip of 0.2, over 2 draws of the order (one JSON line per case).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

from trainers import teamtr
from trainers.common.objectives import message_log_ratio
from trainers.common.team import build_team
from trainers.common.updates import accumulate


def _log_ratios(policy, samples, passes: list[np.ndarray]) -> torch.Tensor:
    """The message log-ratios of ``accumulate`` over each pass's rows, at zero update."""
    seen: list[torch.Tensor] = []

    def loss_of(part, _):
        logp = policy.token_logprobs(part)
        seen.append(message_log_ratio(logp, part.old_logp, part.mask).detach())
        return (logp * part.mask).sum() * 0.0, {}

    for rows in passes:
        accumulate(policy, samples, rows, loss_of)
    return torch.cat(seen)


def main(prompts: int = 4, group_size: int = 4, score_batch_size: int = 4) -> None:
    args = teamtr.Args(env_id="team_envs/arithmetic_chain-v0", n_agents=3, lora_rank=8,
                       model="smollm2", max_new_tokens=32, dtype="bfloat16", log_dir="",
                       score_batch_size=score_batch_size, prompts_per_rollout=prompts,
                       group_size=group_size, total_episodes=prompts * group_size)
    team = build_team(args)
    samples, policy = team.collect(prompts, group_size).samples[1], team.policies[1]
    generator = torch.Generator().manual_seed(0)
    cases = {
        "shuffled": lambda order: list(order.split(score_batch_size)),
        "update": lambda order: [order],
        "minibatches=4": lambda order: list(order.chunk(4)),
    }
    for name, passes_of in cases.items():
        draws = []
        for _ in range(2):
            order = torch.randperm(len(samples), generator=generator)
            ratios = _log_ratios(policy, samples, [p.numpy() for p in passes_of(order)]).abs()
            draws.append({"max": round(float(ratios.max()), 3),
                          "mean": round(float(ratios.mean()), 3),
                          "beyond_clip": round(float((ratios > 0.2).float().mean()), 3)})
        print(json.dumps({"case": name, "messages": len(samples),
                          "score_batch_size": score_batch_size, "draws": draws}))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
