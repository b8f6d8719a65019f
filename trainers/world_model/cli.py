"""``agentworld wm sft`` and ``agentworld wm rl``: train a world model (on TRL).

The console script (:mod:`agentworld_envs.cli`) adds these commands to the ``wm`` group built by
:mod:`agentworld_envs.bench.cli`. Each takes our flags, generated from :class:`~.sft.SFTArgs`
or :class:`~.rl.RLArgs`, and any flag of TRL's own ``SFTConfig`` or ``GRPOConfig``
(``--learning_rate`` or ``--learning-rate``), read by Transformers' ``HfArgumentParser`` and
starting from :data:`~.sft.SFT_DEFAULTS` or :data:`~.rl.GRPO_DEFAULTS`. TRL and torch load only
when a command runs or its ``--help`` is asked for.

Examples::

    agentworld wm sft --train data/train.jsonl --output_dir runs/wm
    agentworld wm rl --train data/train.jsonl --model runs/wm --output_dir runs/wm_rl
"""

from __future__ import annotations

import argparse

from trainers.common.flags import ConfigHelp, add_dataclass_args, dataclass_from_args, parse_config
from trainers.world_model.rl import RLArgs, grpo_settings
from trainers.world_model.sft import SFTArgs, sft_settings

__all__ = ["add_commands"]


def _cmd_sft(args: argparse.Namespace) -> int:
    from trainers.world_model.sft import train_sft

    config_cls, defaults = sft_settings()
    config = parse_config(config_cls, args.extra, defaults, prog="agentworld wm sft")
    result = train_sft(dataclass_from_args(SFTArgs, args), config)
    print(f"saved {result.out}: {result.steps} steps, {result.tokens_per_second:.0f} tok/s")
    return 0


def _cmd_rl(args: argparse.Namespace) -> int:
    from trainers.world_model.rl import NothingLearnedError, train_rl

    config_cls, defaults = grpo_settings()
    config = parse_config(config_cls, args.extra, defaults, prog="agentworld wm rl")
    result = train_rl(dataclass_from_args(RLArgs, args), config)
    print(f"saved {result.out}")
    if not result.learned:
        raise NothingLearnedError(
            f"every step's groups of samples scored alike (frac_reward_zero_std 1), so GRPO "
            f"learned nothing (the model is saved in {result.out}): let the samples differ (a "
            f"longer max_completion_length, a higher temperature, a judge)")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``sft`` and ``rl`` to the ``wm`` group's subcommands."""
    for name, cls, config, handler, help_text in (
            ("sft", SFTArgs, sft_settings, _cmd_sft, "next-observation SFT (TRL SFTTrainer)"),
            ("rl", RLArgs, grpo_settings, _cmd_rl,
             "GSPO/GRPO with the hybrid reward (TRL GRPOTrainer)")):
        command = commands.add_parser(
            name, help=help_text, add_help=False, allow_abbrev=False,
            description=f"{help_text}. Our flags are listed first; any flag of TRL's config "
                        "follows them (--learning_rate or --learning-rate).")
        command.add_argument("-h", "--help", action=ConfigHelp, config=config)
        add_dataclass_args(command, cls)
        command.set_defaults(handler=handler, takes_config_flags=True)
