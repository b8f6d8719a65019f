"""Stable-Baselines3 PPO learning AgentFloor tasks through the text-to-numeric wrappers.

Each task trains its own PPO policy on :func:`agentworld_envs.wrappers.wrap_for_sb3`: actions are
an index into the variant's admissible candidates (shuffled at every reset, so an index means a
different action in every episode), observations are the byte-level token ids of the prompt, of
the latest tool result and of every candidate, plus the step counter.
:class:`~agentworld_envs.wrappers.CandidateScoringPolicy` scores each candidate against the
state. Every ``--eval-every`` timesteps the greedy policy plays each variant of the task once,
at a fixed seed per variant (so a fixed shuffle); envs and policy are deterministic, so that is
the exact success rate over variants. The curves go to ``--plot``.

Run (needs the ``rl`` and ``plot`` extras)::

    python examples/sb3_ppo_floor.py --tasks B2,C4,D2,E5 --timesteps 16384 --plot curves.png

Quick check (CPU, seconds; too short to learn): ``python examples/sb3_ppo_floor.py
--tasks A02,B2 --timesteps 256 --eval-every 256 --plot curves.png``
"""

from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger

import floor_tasks
from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageParser, int_at_least, number_type, seed_number
from agentworld_envs.wrappers import CandidateScoringPolicy, wrap_for_sb3
from floor_tasks.candidates import candidate_actions
from floor_tasks.harness.cli import check_task_ids
from trainers.common.args import most_threads


@dataclass
class Args:
    """Command-line settings."""

    tasks: list[str]
    """AgentFloor task ids, one PPO run each."""
    timesteps: int
    """Training budget per task, in env steps (assistant turns)."""
    eval_every: int
    """Timesteps between greedy evaluations; a multiple of n_envs * n_steps."""
    n_envs: int
    """Parallel envs per PPO run."""
    n_steps: int
    """Rollout length per env between updates."""
    max_length: int
    """Token ids kept per text (prompt and latest observation)."""
    seed: int
    """Seed of envs, policy initialisation and sampling."""
    threads: int
    """Torch CPU threads."""
    plot: str | None
    """Where to save the success-rate curves (PNG); None skips the plot."""


def parse_args(argv: list[str] | None = None) -> Args:
    """Read :class:`Args` from the command line."""
    parser = UsageParser(description=__doc__.splitlines()[0])
    positive = int_at_least(1)
    parser.add_argument("--tasks", default="B2,C4,D2,E5", type=lambda s: s.split(","),
                        help="comma-separated AgentFloor task ids, one PPO run each")
    parser.add_argument("--timesteps", type=positive, default=16384,
                        help="training budget per task, in env steps")
    parser.add_argument("--eval-every", type=positive, default=2048,
                        help="timesteps between greedy evaluations (a multiple of n-envs * "
                             "n-steps)")
    parser.add_argument("--n-envs", type=positive, default=4, help="parallel envs per PPO run")
    parser.add_argument("--n-steps", type=positive, default=64,
                        help="rollout length per env between updates")
    parser.add_argument("--max-length", type=positive, default=128,
                        help="token ids kept per text")
    parser.add_argument("--seed", type=seed_number, default=0,
                        help="seed of envs, policy initialisation and sampling")
    parser.add_argument("--threads", type=number_type(int, 1, most_threads()),
                        default=1,
                        help="torch CPU threads (at most 8 per CPU of this machine)")
    parser.add_argument("--plot", default=None, help="where to save the curves (PNG)")
    args = Args(**vars(parser.parse_args(argv)))
    if args.eval_every % (args.n_envs * args.n_steps):
        parser.error("--eval-every must be a multiple of --n-envs * --n-steps")
    check_task_ids(args.tasks)  # all checked before the first task trains for minutes
    if args.plot:  # all checked before training, not when the curves are saved
        plot_path = Path(args.plot)
        if not plot_path.resolve().parent.is_dir():
            parser.error(f"--plot {args.plot}: its folder does not exist")
        if plot_path.is_dir():
            parser.error(f"--plot {args.plot}: is a folder; name the PNG file to write")
        if plot_path.suffix.lower() != ".png":  # savefig would refuse it, or add ".png"
            parser.error(f"--plot {args.plot}: name a .png file")
        if importlib.util.find_spec("matplotlib") is None:
            parser.error('--plot needs matplotlib: pip install "agentworld[plot]"')
    return args


def make_env(task_id: str, max_length: int) -> gym.Env:
    """The task's env, wrapped for SB3 with exactly as many choices as its largest list."""
    variants = floor_tasks.load_task(task_id).variant_names
    size = max(len(candidate_actions(task_id, variant, wide=True)) for variant in variants)
    env = gym.make(floor_tasks.env_id(task_id))
    return wrap_for_sb3(env, max_candidates=size, max_length=max_length)


def greedy_success(model: PPO, task_id: str, max_length: int) -> float:
    """Fraction of the task's variants that the greedy policy solves."""
    env = make_env(task_id, max_length)
    variants = floor_tasks.load_task(task_id).variant_names
    solved = 0
    for seed, variant in enumerate(variants):
        obs, _ = env.reset(seed=seed, options={"variant": variant})
        done, reward = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            done = terminated or truncated
        solved += reward == 1.0
    env.close()
    return solved / len(variants)


def train(task_id: str, args: Args) -> list[tuple[int, float]]:
    """Train PPO on one task; return the (timesteps, greedy success) curve."""
    venv = make_vec_env(lambda: make_env(task_id, args.max_length), n_envs=args.n_envs,
                        seed=args.seed)
    model = PPO(CandidateScoringPolicy, venv, n_steps=args.n_steps, batch_size=64, n_epochs=10,
                learning_rate=1e-3, gamma=0.9, ent_coef=0.01, normalize_advantage=False,
                seed=args.seed, device="cpu")
    model.set_logger(Logger(None, []))  # SB3's default makes a folder in /tmp at every learn()
    curve = [(0, greedy_success(model, task_id, args.max_length))]
    while model.num_timesteps < args.timesteps:
        model.learn(args.eval_every, reset_num_timesteps=False)
        curve.append((model.num_timesteps, greedy_success(model, task_id, args.max_length)))
    venv.close()
    return curve


def plot(curves: dict[str, list[tuple[int, float]]], path: str) -> None:
    """Save one success-rate line per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for task_id, curve in curves.items():
        tier = floor_tasks.load_task(task_id).tier
        axes.plot(*zip(*curve, strict=True), marker="o", label=f"{task_id} (tier {tier})")
    axes.axhline(0.9, color="grey", linestyle="--", linewidth=1)
    axes.set(xlabel="timesteps", ylabel="greedy success rate (all variants)", ylim=(-0.05, 1.05),
             title="SB3 PPO on AgentFloor tasks")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    curves = {}
    print("| task | tier | variants | candidates | first evaluation at >= 90% (timesteps) | "
          "final success | wall s |")
    print("|---|---|---|---|---|---|---|")
    for task_id in args.tasks:
        started = time.perf_counter()
        curves[task_id] = curve = train(task_id, args)
        reached = next((steps for steps, success in curve if success >= 0.9), None)
        task = floor_tasks.load_task(task_id)
        size = make_env(task_id, args.max_length).action_space.n
        print(f"| {task_id} | {task.tier} | {len(task.variant_names)} | {size} | "
              f"{reached if reached is not None else 'not reached'} | {curve[-1][1]:.2f} | "
              f"{time.perf_counter() - started:.0f} |", flush=True)
    if args.plot:
        plot(curves, args.plot)
        print(f"curves saved to {args.plot}")


if __name__ == "__main__":
    sys.exit(run_command(main))
