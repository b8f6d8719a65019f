"""``agentworld team``: list the team envs, play one, or train a team.

The trainers (and torch) are imported only when ``train`` runs; each trainer parses its own
options, so ``agentworld team train teamtr --help`` lists TeamTR's settings.
"""

from __future__ import annotations

import argparse
import importlib

from agentworld_envs.cli_errors import Interrupted, UsageError, int_at_least, name_of
from trainers.common.flags import json_object

__all__ = ["ALGORITHMS", "add_commands"]

ALGORITHMS = {
    "teamtr": "trainers.teamtr",
    "stale_sequential": "trainers.stale_sequential",
    "kl_no_refresh": "trainers.kl_no_refresh",
    "joint": "trainers.joint",
    "single_agent_grpo": "trainers.single_agent_grpo",
    "happo": "trainers.happo",
}
"""Trainer name -> module with ``Args``, ``train`` and ``main``."""


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add the ``envs``, ``play`` and ``train`` subcommands to ``parser``."""
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    envs = commands.add_parser("envs", help="list the registered team envs")
    envs.set_defaults(handler=_envs)
    play = commands.add_parser("play", help="play one episode with random messages and print it")
    play.add_argument("env_id", type=_team_env_id, help="a team env id, e.g. team_envs/relay-v0")
    play.add_argument("--seed", type=int_at_least(0), default=0, help="episode seed")
    play.add_argument("--env-kwargs", type=json_object, default={},
                      help='env keyword arguments as JSON, e.g. \'{"n_agents": 4}\'')
    play.set_defaults(handler=_play)
    train = commands.add_parser(
        "train", help="train a team; options: agentworld team train ALGORITHM --help")
    train.add_argument("algorithm", choices=sorted(ALGORITHMS),
                       help="TeamTR or a baseline (each one's settings: ALGORITHM --help)")
    train.add_argument("options", nargs=argparse.REMAINDER,
                       help="the trainer's options (see ALGORITHM --help)")
    train.set_defaults(handler=_train)


def _known_team_envs() -> list[str]:
    import team_envs

    return list(team_envs.ENV_MODULES)


_team_env_id = name_of("team env id", _known_team_envs, listing="agentworld team envs")


def _envs(args: argparse.Namespace) -> int:
    import team_envs

    for env_id, module in team_envs.ENV_MODULES.items():
        print(f"{env_id:34} {module}")
    return 0


def _play(args: argparse.Namespace) -> int:
    import pettingzoo

    import team_envs  # noqa: F401  (registers the envs)

    try:
        env = pettingzoo.make("aec", args.env_id, render_mode="ansi", **args.env_kwargs)
    except (TypeError, ValueError) as exc:  # a keyword the env does not take, a bad value
        raise UsageError(f"--env-kwargs: {args.env_id}: {exc}") from exc
    env.reset(seed=args.seed)
    for index, name in enumerate(env.possible_agents):
        env.action_space(name).seed(args.seed + index)
    for name in env.agent_iter():
        _, reward, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else env.action_space(name).sample())
    print(env.unwrapped.render())
    print(f"team reward: {reward}")
    return 0


def _train(args: argparse.Namespace) -> int:
    try:
        trainer = importlib.import_module(ALGORITHMS[args.algorithm])
    except ModuleNotFoundError as exc:  # a library of the train extra (torch)
        raise ImportError(f"agentworld team train needs {exc.name}: "
                          'pip install "agentworld[train]"', name=exc.name) from exc
    try:
        return trainer.main(args.options)
    except KeyboardInterrupt as exc:  # the trainers' loop says what it saved
        if not str(exc):
            raise
        raise Interrupted(str(exc)) from None
