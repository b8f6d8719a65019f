"""GRPO-style group rollouts with sub-envs in Ray actors: ``RayVectorEnv`` with ``group_size``.

Each round resets the vector env, so every group of ``--group-size`` sub-envs plays one task
with one seed; a random policy over each sub-env's candidate actions (``candidate_actions()``,
which AgentWorld and AgentFloor envs both offer, read through ``envs.call``) plays every episode
to its end, and each sub-env's advantage is its reward minus its group's mean (what GRPO trains
on). Swap in an LLM policy for real training; the loop stays the same. ``--env-id`` takes any
``AgentWorld/*`` id (simulated by ``--backend``) or ``AgentFloor/*`` id (real tools, no backend).
The run stops after more than ``--max-faults`` failed world-model calls in one actor (a dead
server), rather than print rewards earned on fallback observations.

Quick check (CPU, seconds): ``python examples/ray_rollouts.py --num-envs 8 --rounds 1``

On a cluster (``ray start --head`` on one node, ``ray start --address=HEAD:6379`` on the
others), against a served world model::

    python examples/ray_rollouts.py --address auto --num-envs 1024 --num-actors 16 \\
        --backend '{"name": "openai", "base_url": ["http://gpu-1:8000/v1"], "model": "M"}'
"""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym
import numpy as np

import floor_tasks  # noqa: F401 - registers AgentFloor/<ID>-v0
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS
from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageError, UsageParser, int_at_least, name_of, seed_number
from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.registration import ENV_IDS
from floor_tasks.harness.cli import backend_arg

DEFAULT_BACKEND = "scripted"
"""The world model of AgentWorld ids when ``--backend`` is not given: the offline placeholder."""


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


def env_ids() -> list[str]:
    """The ids this script plays: every registered AgentWorld and AgentFloor id."""
    return [i for i in gym.registry if i.startswith(("AgentWorld/", "AgentFloor/"))]


def main(argv: list[str] | None = None) -> None:
    parser = UsageParser(description=__doc__.splitlines()[0],
                         formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    positive = int_at_least(1)
    parser.add_argument("--env-id", default="AgentWorld/MCP-v0", type=name_of("env id", env_ids),
                        help="an AgentWorld/<Domain>-v0 or AgentFloor/<ID>-v0 id")
    parser.add_argument("--backend", default=argparse.SUPPRESS, type=backend_arg,  # unset: absent
                        help="a backend name or JSON config (AgentWorld ids only) "
                             f"(default: {DEFAULT_BACKEND})")
    parser.add_argument("--num-envs", type=positive, default=16, help="sub-envs in all")
    parser.add_argument("--num-actors", type=positive, default=None,
                        help="Ray actors; unset: one per CPU of the Ray cluster, at most one per "
                             "group")
    parser.add_argument("--group-size", type=positive, default=4,
                        help="consecutive sub-envs that play one task with one seed")
    parser.add_argument("--rounds", type=positive, default=2, help="episodes per sub-env")
    parser.add_argument("--seed", type=seed_number, default=0,
                        help="seed of the first round's resets and of the random policy")
    parser.add_argument("--max-faults", type=int_at_least(-1), default=argparse.SUPPRESS,
                        help="failed world-model calls an actor goes on after; -1: never stop "
                             f"(AgentWorld ids only) (default: {DEFAULT_MAX_FAULTS})")
    parser.add_argument("--address", default=None, help="a Ray cluster; unset: a local one")
    args = parser.parse_args(argv)
    simulated = {}  # AgentFloor ids play the real tools: no backend
    if args.env_id in ENV_IDS:
        simulated["backend"] = getattr(args, "backend", DEFAULT_BACKEND)
        simulated["max_faults"] = getattr(args, "max_faults", DEFAULT_MAX_FAULTS)
    elif given := [f for f in ("backend", "max_faults") if f in args]:
        flag, what = {"backend": ("--backend", "backend"),
                      "max_faults": ("--max-faults", "world-model fault budget")}[given[0]]
        parser.error(f"argument {flag}: {args.env_id} plays the real tools and takes no "
                     f"{what}; drop {flag} or give an AgentWorld id")
    if args.address:
        import ray

        ray.init(address=args.address)
    rng = np.random.default_rng(args.seed)
    try:
        envs = RayVectorEnv(args.env_id, args.num_envs, num_actors=args.num_actors,
                            group_size=args.group_size, **simulated)
    except ValueError as exc:  # counts that do not fit, refused before Ray starts
        raise UsageError(str(exc)) from None
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
    sys.exit(run_command(main))
