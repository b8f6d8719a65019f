"""The journal of an experiment's finished runs (one arm and seed each) in ``--out``, so that an
interrupted experiment goes on with ``--resume`` with no run lost or run twice
(:class:`~agentworld_envs.run_journal.RunJournal`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.run_journal import RunJournal
from trainers.experiments.sim_to_real.args import Args

JOURNAL = "runs.jsonl"
"""The journal's file in ``--out``."""
NOT_SETTINGS = ("out", "resume", "summarize", "arms", "seeds")
"""Flags a resumed run may change: where it runs, and which runs it makes (not what a run
gives)."""


def settings(args: Args) -> dict[str, Any]:
    """What makes the runs of two invocations comparable: every flag but :data:`NOT_SETTINGS`."""
    return {name: value for name, value in asdict(args).items() if name not in NOT_SETTINGS}


def run_journal(args: Args) -> RunJournal:
    """The journal in ``args.out``, keyed by arm and seed: its runs kept under ``--resume``,
    begun anew without it (as a run without ``--resume`` has always started afresh; a note
    says so where it held runs).

    Raises:
        UsageError: resuming a journal of other settings (naming each one that differs), or
            one that cannot be read.
    """
    path = args.out / JOURNAL
    if not args.resume and path.is_file() and path.read_text(encoding="utf-8").count("\n") > 1:
        print(f"{path}: starting afresh, its finished runs are dropped (pass --resume to keep "
              "them)", flush=True)
    if not args.resume:
        path.unlink(missing_ok=True)
    try:
        return RunJournal(path, lambda run: (run["arm"], run["seed"]), settings(args),
                          args.resume)
    except ValueError as error:
        raise UsageError(f"--resume: {error}") from None
