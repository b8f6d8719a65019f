"""The ``agentworld`` console script. Each package adds its own subcommand group."""

from __future__ import annotations

import argparse
import importlib
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agentworld_envs.cli_errors import Interrupted, UsageError, UsageParser

__all__ = ["main", "run_command"]

# Command groups, imported only when used: name -> (module, help).
GROUPS = {
    "floor": ("floor_tasks.harness.cli",
              "AgentFloor tasks: list, run, sweep, report, compare, rescore"),
    "sim": ("agentworld_envs.sim.cli",
            "Simulated envs: list, scenarios, generate, request, fidelity"),
    "wm": ("agentworld_envs.bench.cli", "World models: bench, fidelity, export, sft, rl"),
    "team": ("trainers.cli", "Shared-context teams: list and play team envs, train TeamTR"),
    "serve": ("agentworld_envs.serve.cli",
              "Serve an env over OpenEnv's protocol (HTTP and WebSocket sessions)"),
}
EXTENSIONS = {"wm": ("trainers.world_model.cli",)}
"""Modules that add commands to another package's group: each one's ``add_commands`` gets the
subcommands that the group's own ``add_commands`` returns (the world-model training commands
live with the trainers, so the bench package never imports them)."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser, with one sub-parser per command group."""
    parser = UsageParser(
        prog="agentworld", description="Environments for training and testing LLM agents.")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of its one-line summary")
    groups = parser.add_subparsers(dest="group", required=True, metavar="GROUP")
    for name, (module, help_text) in GROUPS.items():
        commands = importlib.import_module(module).add_commands(groups.add_parser(
            name, help=help_text, description=help_text))
        for extension in EXTENSIONS.get(name, ()):
            importlib.import_module(extension).add_commands(commands)
    return parser


# Expected errors of other packages, by "module:class" (matched along the exception's MRO, so
# that reporting them imports nothing): exit status and message prefix.
_EXPECTED = {
    "floor_tasks.harness.corpus_io:CorruptCorpusError": (2, "corrupt corpus: "),
    "floor_tasks.harness.sweep_config:SweepConfigError": (2, ""),
    "agentworld_envs.world.prompt_sets:PromptSetError": (2, ""),
    "agentworld_envs.bench.items:BenchFormatError": (2, ""),
    "trainers.common.args:ConfigError": (2, ""),
    "agentworld_envs.backends.faults:TooManyFaultsError": (1, ""),
    "agentworld_envs.backends.base:BackendError": (1, "backend failed: "),
    "builtins:FloatingPointError": (1, ""),  # a trainer's non-finite loss, stopped before a step
    "trainers.world_model.rl:NothingLearnedError": (1, ""),
}


_VALIDATION_ERROR = "pydantic_core._pydantic_core:ValidationError"


def _names(exc: BaseException) -> list[str]:
    """The "module:class" names along the exception's MRO."""
    return [f"{cls.__module__}:{cls.__qualname__}" for cls in type(exc).__mro__]


def _wrapped(exc: Any) -> list[Any]:
    """The errors a pydantic ``ValidationError`` wraps (a validator's ``ValueError``), one per
    failure (None for a failure that wraps none, such as a wrong type)."""
    return [error.get("ctx", {}).get("error") for error in exc.errors()]


def _expected(exc: BaseException) -> tuple[int, str] | None:
    """Exit status and report of an expected error; None for anything else (a bug).

    A pydantic ``ValidationError`` (a settings object built from the command line) is expected
    when every failure it holds wraps an expected error: it is reported as those."""
    if isinstance(exc, Interrupted):
        return 130, f"interrupted: {exc}"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    if isinstance(exc, UsageError):
        return 2, f"error: {exc}"
    for name in _names(exc):
        known = _EXPECTED.get(name)
        if known:
            return known[0], f"error: {known[1]}{exc}"
    if _VALIDATION_ERROR in _names(exc):
        causes = [_expected(cause) if isinstance(cause, BaseException) else None
                  for cause in _wrapped(exc)]
        if causes and all(causes):
            return causes[0][0], "error: " + "; ".join(report.removeprefix("error: ")
                                                       for _, report in causes)
    if isinstance(exc, ImportError) and "pip install" in str(exc):  # a missing extra's hint
        return 1, f"error: {exc}"
    if isinstance(exc, FileNotFoundError):
        return 2, f"error: no such file or directory: {exc.filename} (check the path)"
    if isinstance(exc, IsADirectoryError | NotADirectoryError | FileExistsError):
        return 2, f"error: {exc.filename}: {exc.strerror.lower()} (check the path)"
    if isinstance(exc, OSError):
        return 1, f"error: {exc}"
    return None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush after a broken pipe
    (``agentworld sim list | head -1``) is silent."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured or replaced (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status.

    Expected errors become one line on stderr (``agentworld: error: ...``), exit status 2
    (usage) or 1 (failure); Ctrl-C exits 130; a broken stdout pipe ends quietly. With
    ``--debug`` before the command group (``agentworld --debug floor run``) the traceback is
    shown instead; a ``--debug`` after it belongs to the command (TRL's own ``--debug`` of
    ``wm sft``), or is an unrecognised argument.
    """
    argv = list(sys.argv[1:] if argv is None else argv)

    def command() -> int:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "takes_config_flags", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.extra = extra  # a library config's own flags (``agentworld wm sft``)
        args.argv = argv  # for commands that print how to resume them
        return int(args.handler(args) or 0)

    leading = itertools.takewhile(lambda arg: arg.startswith("-"), argv)
    return run_command(command, prog="agentworld", debug="--debug" in leading)


def run_command(command: Callable[[], object], prog: str | None = None, *,
                debug: bool = False) -> int:
    """Run ``command`` as the console script runs one; returns its exit status (what it
    returns, if an int, else 0).

    Expected errors become one line on stderr (``PROG: error: ...``, or ``error: ...`` without
    ``prog``), exit status 2 (usage) or 1 (failure); Ctrl-C exits 130; a broken stdout pipe
    ends quietly; anything else (a bug) raises, as every error does with ``debug``. The
    example scripts run their ``main`` through it.
    """
    try:
        status = command()
        sys.stdout.flush()  # a broken pipe shows here, not at exit
        return status if isinstance(status, int) else 0
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        expected = _expected(exc)
        if expected is None or debug:
            raise
        message = "; ".join(line.strip() for line in expected[1].splitlines() if line.strip())
        print(f"{prog}: {message}" if prog else message, file=sys.stderr)
        return expected[0]


if __name__ == "__main__":
    sys.exit(main())
