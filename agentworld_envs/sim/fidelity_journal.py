"""The journal of an ``agentworld sim fidelity`` run with ``--out``, so that an interrupted run
goes on with ``--resume`` with no scenario lost or played twice.

Each scenario's measures go into ``OUT/scenarios.jsonl`` as soon as its reference solution has
been played, keyed by its place in the run's list of scenarios (a
:class:`~agentworld_envs.run_journal.RunJournal`: line 1 holds the run's settings, a resume
under other settings is refused naming each one, a last line cut by the interruption is played
again). The journal stays once the run ends, so that resuming a finished run rewrites its
report; a journal that holds scenarios is only resumed, never started afresh over. Opening it
removes an earlier run's report, rewritten when this run ends, so that a run stopped before
then (by a kill too) leaves none to pass for its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.run_journal import RunJournal

__all__ = ["JOURNAL", "REPORT", "FidelityJournal"]

JOURNAL = "scenarios.jsonl"
"""The journal's file in ``--out``."""
REPORT = "fidelity.json"
"""The report's file in ``--out`` (the ``--json`` report), written once the run ends."""


class FidelityJournal:
    """The finished scenarios' records, by index (``done``), kept in ``folder/scenarios.jsonl``.

    Args:
        folder: The run's output folder; None keeps nothing (a run without ``--out``).
        settings: What makes the measures comparable, by name (JSON values); line 1, checked on
            resuming.
        resume: Go on with the journal in ``folder``.

    Raises:
        UsageError: ``resume`` without a folder or without a journal in it; a journal of
            scenarios without ``resume``; other settings; a line that is not JSON.
    """

    def __init__(self, folder: str | Path | None, settings: dict[str, Any],
                 resume: bool = False) -> None:
        self.path = Path(folder) / JOURNAL if folder else None
        self._journal: RunJournal | None = None
        self.done: dict[Any, dict[str, Any]] = {}
        if self.path is None:
            if resume:
                raise UsageError("--resume needs --out, the folder of the run to resume")
            return
        if resume and not self.path.is_file():
            raise UsageError(f"--resume: {self.path.parent} holds no {JOURNAL}, so there is no "
                             "run to resume there")
        try:
            self._journal = RunJournal(self.path, lambda record: record["index"], settings,
                                       resume)
        except ValueError as error:
            raise UsageError(f"--resume: {error}" if resume else str(error)) from None
        (self.path.parent / REPORT).unlink(missing_ok=True)
        self.done = self._journal.done

    def keep(self, record: dict[str, Any]) -> None:
        """Keep a finished scenario's record (its ``index`` is its key)."""
        if self._journal is None:
            self.done[record["index"]] = record
        else:
            self._journal.keep(record)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> FidelityJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
