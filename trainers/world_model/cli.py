"""``agentworld wm sft`` and ``agentworld wm rl``: train a world model (on TRL).

The console script (:mod:`agentworld_envs.cli`) adds these commands to the ``wm`` group built by
:mod:`agentworld_envs.bench.cli`; their flags are generated from :class:`~.sft.SFTArgs` and
:class:`~.rl.RLArgs`. TRL and torch load only when a command runs.

Examples::

    agentworld wm sft --train data/train.jsonl --out runs/wm
    agentworld wm rl --train data/train.jsonl --model runs/wm --out runs/wm_rl
"""

from __future__ import annotations

import argparse

from trainers.common.flags import add_dataclass_args, dataclass_from_args
from trainers.world_model.rl import RLArgs
from trainers.world_model.sft import SFTArgs

__all__ = ["add_commands"]


def _cmd_sft(args: argparse.Namespace) -> int:
    from trainers.world_model.sft import train_sft

    result = train_sft(dataclass_from_args(SFTArgs, args))
    print(f"saved {result.out}: {result.steps} steps, {result.tokens_per_second:.0f} tok/s")
    return 0


def _cmd_rl(args: argparse.Namespace) -> int:
    from trainers.world_model.rl import train_rl

    result = train_rl(dataclass_from_args(RLArgs, args))
    print(f"saved {result.out}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``sft`` and ``rl`` to the ``wm`` group's subcommands."""
    for name, cls, handler, help_text in (
            ("sft", SFTArgs, _cmd_sft, "next-observation SFT (TRL SFTTrainer)"),
            ("rl", RLArgs, _cmd_rl, "GSPO/GRPO with the hybrid reward (TRL GRPOTrainer)")):
        command = commands.add_parser(name, help=help_text)
        add_dataclass_args(command, cls)
        command.set_defaults(handler=handler)
