"""The ``agentworld`` console script. Each package adds its own subcommand group."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

# Command groups, imported only when used: name -> (module, help).
GROUPS = {
    "floor": ("floor_tasks.harness.cli", "AgentFloor tasks: list, run, sweep, report, compare"),
    "sim": ("agentworld_envs.sim.cli", "Simulated envs: list, scenarios, generate, fidelity"),
    "wm": ("agentworld_envs.bench.cli", "World models: bench, fidelity, export, sft, rl"),
    "team": ("trainers.cli", "Shared-context teams: list and play team envs, train TeamTR"),
}
EXTENSIONS = {"wm": ("trainers.world_model.cli",)}
"""Modules that add commands to another package's group: each one's ``add_commands`` gets the
subcommands that the group's own ``add_commands`` returns (the world-model training commands
live with the trainers, so the bench package never imports them)."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, with one sub-parser per command group."""
    parser = argparse.ArgumentParser(
        prog="agentworld", description="Environments for training and testing LLM agents.")
    groups = parser.add_subparsers(dest="group", required=True, metavar="GROUP")
    for name, (module, help_text) in GROUPS.items():
        commands = importlib.import_module(module).add_commands(groups.add_parser(
            name, help=help_text, description=help_text))
        for extension in EXTENSIONS.get(name, ()):
            importlib.import_module(extension).add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
