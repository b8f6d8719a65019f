"""Train a symbolic relay team with TeamTR, then swap one agent (Stage-0) and keep training.

Run: ``python examples/teamtr_symbolic.py`` (about ten seconds), or with a budget, e.g.
``python examples/teamtr_symbolic.py --n-agents 4 --total-episodes 40000``. Any TeamTR setting
can be passed (``--help`` lists them); TensorBoard logs go to ``runs/`` unless ``--log-dir ''``.

Quick check (CPU, seconds): ``python examples/teamtr_symbolic.py --total-episodes 1536
--prompts-per-rollout 32 --replace-at-stage 1 --eval-episodes 256 --log-dir ''``
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pettingzoo

import team_envs  # noqa: F401  (registers team_envs/... in PettingZoo)
from agentworld_envs.cli import run_command
from trainers import teamtr
from trainers.common.flags import parse_args

DEFAULTS = ["--env-id", "team_envs/relay-v0", "--n-agents", "3", "--env-kwargs",
            '{"vocab_size": 4, "credit": "steps"}', "--total-episodes", "20000",
            "--learning-rate", "0.01", "--eval-every", "4", "--replace-agent", "1",
            "--replace-at-stage", "18", "--replacement-hidden-size", "128"]


def show_episode(result: teamtr.TrainResult, env_id: str, env_kwargs: dict) -> None:
    """Play one PettingZoo episode with the trained policies and print the transcript."""
    env = pettingzoo.make("aec", env_id, render_mode="ansi", **env_kwargs)
    env.reset(seed=0)
    generator = result.team.generator
    for name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        policy = result.team.policies[int(name.split("_")[1])]
        private = observation.get("private", observation["context"][:0])
        message = policy.sample(observation["context"][None], private[None], generator)[0]
        env.step(message[0])
    print(env.unwrapped.render(), f"\nteam reward: {reward}")


def main(argv: Sequence[str] | None = None) -> int:
    """Train, report the Stage-0 swap, and show one episode."""
    args = parse_args(teamtr.Args, DEFAULTS + list(sys.argv[1:] if argv is None else argv),
                      prog="teamtr_symbolic.py")
    result = teamtr.train(args)
    print(f"team reward on evaluation episodes: {result.initial_eval:.3f} -> "
          f"{result.final_eval:.3f} after {result.team.episodes} rollout episodes")
    swap = next((r for r in result.history if "stage0/kl" in r), None)
    if swap is not None:
        bound = "within" if swap["stage0/within_bound"] else "not within"
        print(f"stage {swap['stage']}: agent_{int(swap['stage0/agent'])} replaced; Stage-0 "
              f"reached KL {swap['stage0/kl']:.4f} ({bound} delta_0 = {args.stage0_delta}) "
              f"in {int(swap['stage0/steps'])} steps")
    team_size = {} if args.n_agents is None else {"n_agents": args.n_agents}
    show_episode(result, args.env_id, {**args.env_kwargs, **team_size})
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main))
