"""The journal of an ``agentworld sim fidelity`` run with ``--out``, so that an interrupted run
goes on with ``--resume`` with no scenario lost or played twice.

Each scenario's measures go into ``OUT/scenarios.jsonl`` as soon as its reference solution has
been played, one flushed and fsynced JSON line each, keyed by its place in the run's list of
scenarios. Line 1 holds the run's settings; resuming under other settings is refused, naming
each one that differs. A last line without its newline was cut by the interruption: it is cut
from the file, and its scenario played again. The journal stays once the run ends, so that
resuming a finished run rewrites its report; a journal that holds scenarios is only resumed,
never started afresh over.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.protocol.shown import shown

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
            scenarios without ``resume``; other settings; a line that is not the journal's.
    """

    def __init__(self, folder: str | Path | None, settings: dict[str, Any],
                 resume: bool = False) -> None:
        self.done: dict[int, dict[str, Any]] = {}
        self.path = Path(folder) / JOURNAL if folder else None
        self._sink: Any = None
        if self.path is None:
            if resume:
                raise UsageError("--resume needs --out, the folder of the run to resume")
            return
        settings = json.loads(json.dumps(settings))
        if resume and not self.path.is_file():
            raise UsageError(f"--resume: {self.path.parent} holds no {JOURNAL}, so there is no "
                             "run to resume there")
        saved = self._read() if self.path.is_file() else None
        if self.done and not resume:
            raise UsageError(f"{self.path} holds {len(self.done)} finished scenarios: pass "
                             "--resume to keep them, or choose another --out")
        started = resume and saved is not None
        if started:
            self._check(saved, settings)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sink = self.path.open("a" if started else "w", encoding="utf-8")
        if not started:
            self._write({"settings": settings})

    def _read(self) -> Any:
        """Load the journal's scenarios (a cut last line is cut from the file); return its
        first line (None for a journal cut before its newline)."""
        assert self.path is not None
        data = self.path.read_bytes()
        whole = data.rfind(b"\n") + 1
        first = None
        for number, line in enumerate(data[:whole].split(b"\n")[:-1], 1):
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if number == 1:
                first = entry
            elif isinstance(entry, dict) and isinstance(entry.get("index"), int):
                self.done[entry["index"]] = entry
            else:
                raise UsageError(f"{self.path}:{number}: not a scenario's line; remove the "
                                 "journal to start afresh")
        if whole < len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(whole)
        return first if whole else None

    def _check(self, first: Any, settings: dict[str, Any]) -> None:
        saved = first.get("settings") if isinstance(first, dict) else None
        if not isinstance(saved, dict):
            raise UsageError(f"{self.path}:1: the journal does not start with its settings; "
                             "remove it to start afresh")
        if changes := [f"{name} ({shown(saved.get(name))} -> {shown(settings.get(name))})"
                       for name in sorted(saved.keys() | settings.keys())
                       if saved.get(name) != settings.get(name)]:
            raise UsageError(f"--resume: this run's settings differ from the journal's in "
                             f"{'; '.join(changes)}; resume with the same ones, or run afresh "
                             "into another --out")

    def _write(self, entry: dict[str, Any]) -> None:
        self._sink.write(json.dumps(entry) + "\n")
        self._sink.flush()
        os.fsync(self._sink.fileno())

    def keep(self, record: dict[str, Any]) -> None:
        """Keep a finished scenario's record (its ``index`` is its key)."""
        self.done[record["index"]] = record
        if self._sink is not None:
            self._write(record)

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def __enter__(self) -> FidelityJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
