"""GRPO-style group rollouts with sub-envs in Ray actors: ``RayVectorEnv`` with ``group_size``.

Each round resets the vector env, so every group of ``--group-size`` sub-envs plays one task
with one seed; a random policy over each sub-env's candidate actions (``candidate_actions()``,
which AgentWorld and AgentFloor envs both offer, read through ``envs.call``) plays every episode
to its end, and each sub-env's advantage is its reward minus its group's mean (what GRPO trains
on). Swap in an LLM policy for real training; the loop stays the same. ``--env-id`` takes any
``AgentWorld/*`` id (simulated by ``--backend``) or ``AgentFloor/*`` id (real tools, no backend).

Quick check (CPU, seconds): ``python examples/ray_rollouts.py --num-envs 8 --rounds 1``

On a cluster (``ray start --head`` on one node, ``ray start --address=HEAD:6379`` on the
others), against a served world model::

    python examples/ray_rollouts.py --address auto --num-envs 1024 --num-actors 16 \\
        --backend '{"name": "openai", "base_url": ["http://gpu-1:8000/v1"], "model": "M"}'
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.registration import ENV_IDS


def play_round(envs: RayVectorEnv, seed: int, rng: np.random.Generator) -> np.ndarray:
    """Every sub-env's reward for one episode, all started by one ``reset(seed=seed)``."""
    envs.reset(seed=seed)
    rewards = np.full(envs.num_envs, np.nan)
    while np.isnan(rewards).any():
        actions = [c[rng.integers(len(c))] for c in envs.call("candidate_actions")]
        _, reward, terminated, truncated, _ = envs.step(actions)
        ended = (terminated | truncated) & np.isnan(rewards)
        rewards[ended] = reward[ended]
    return rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="AgentWorld/MCP-v0")
    parser.add_argument("--backend", default="scripted",
                        help="a backend name or JSON config (AgentWorld ids only)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--num-actors", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--address", default=None, help="a Ray cluster (default: a local one)")
    args = parser.parse_args()
    if args.address:
        import ray

        ray.init(address=args.address)
    backend = json.loads(args.backend) if args.backend.startswith("{") else args.backend
    simulated = {"backend": backend} if args.env_id in ENV_IDS else {}  # AgentFloor: no model
    rng = np.random.default_rng(args.seed)
    envs = RayVectorEnv(args.env_id, args.num_envs, num_actors=args.num_actors,
                        group_size=args.group_size, **simulated)
    try:
        for round_index in range(args.rounds):
            rewards = play_round(envs, args.seed + round_index * args.num_envs, rng)
            groups = rewards.reshape(-1, args.group_size)
            advantages = groups - groups.mean(axis=1, keepdims=True)
            for group, (got, advantage) in enumerate(zip(groups, advantages, strict=True)):
                print(f"round {round_index} group {group}: rewards {got.tolist()} "
                      f"advantages {np.round(advantage, 3).tolist()}")
    finally:
        envs.close()


if __name__ == "__main__":
    main()
