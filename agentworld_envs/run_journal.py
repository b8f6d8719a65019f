"""A journal of a run's finished units (an experiment's runs, a fidelity run's scenarios), one
JSON line each, so that an interrupted run resumes with no unit lost or done twice.

The first line holds the experiment's settings; resuming under other settings is refused, since
the runs would not be comparable. A run is written and flushed as soon as it finishes; a last
line cut off by the interruption is dropped on resuming (that run is done again). A journal that
holds runs is only ever resumed: opening it without ``resume`` is refused, not a fresh start
that would lose them. One that holds none (its settings line alone, or cut off) starts afresh.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.protocol.shown import shown

__all__ = ["JournalError", "RunJournal"]


class JournalError(UsageError, ValueError):
    """A journal that cannot be opened as asked (runs kept without ``--resume``, other
    settings, a damaged line): one line on the command line, exit 2."""


class RunJournal:
    """Finished runs, by key, kept in a JSON-lines file.

    Args:
        path: The journal file.
        key: A run's identity, from its record (for example its method and seed).
        settings: What makes runs comparable; written first, checked on resuming.
        resume: Keep the runs already in ``path``; without it, a ``path`` that holds runs is
            refused (one that holds none is started afresh).
        added: Settings added after some journals were written, each with the value those
            journals' runs were made with: a saved settings line that lacks one is read with it.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "runs.jsonl"
        >>> key = lambda run: run["seed"]
        >>> with RunJournal(path, key, {"budget": 8}) as journal:
        ...     journal.keep({"seed": 0, "reward": 0.5})
        >>> with RunJournal(path, key, {"budget": 8}, resume=True) as journal:
        ...     sorted(journal.done)
        [0]
    """

    def __init__(self, path: Path, key: Callable[[dict[str, Any]], Hashable],
                 settings: dict[str, Any] | None = None, resume: bool = False,
                 added: dict[str, Any] | None = None) -> None:
        self.path, self.key, self.added = Path(path), key, dict(added or {})
        self.settings = json.loads(json.dumps(settings)) if settings is not None else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        *whole, cut = text.split("\n")
        saved, runs = self._parse(whole)
        if runs and not resume:
            raise JournalError(f"{self.path} holds {len(runs)} finished runs: pass --resume to "
                             "keep them, or delete the file (or choose another --out) to start "
                             "afresh")
        if runs and self.settings is not None:
            if saved is None:
                raise JournalError(f"{self.path} holds runs but not the settings they were made "
                                 "with; delete the file (or choose another --out) to start "
                                 "afresh")
            self._check(saved)
        self.done: dict[Hashable, dict[str, Any]] = {self.key(run): run for run in runs}
        if runs:
            if cut:  # the last line, cut off by the interruption
                with self.path.open("r+b") as handle:
                    handle.truncate(len(text.encode("utf-8")) - len(cut.encode("utf-8")))
            self._sink = self.path.open("a", encoding="utf-8")
        else:  # nothing to keep: a header alone, or cut before its newline, is written anew
            self._sink = self.path.open("w", encoding="utf-8")
            if self.settings is not None:
                self._write({"settings": self.settings})

    def _parse(self, lines: list[str]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The settings of the first line (None without them) and the runs of the others."""
        saved, runs = None, []
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                raise JournalError(f"{self.path}:{number}: not a JSON line; delete the file to "
                                 "start the experiment afresh") from None
            if number == 1 and "settings" in record:
                saved = record["settings"]
            else:
                runs.append(record)
        return saved, runs

    def _check(self, saved: dict[str, Any]) -> None:
        saved = {**self.added, **saved}
        if saved != self.settings:
            differ = [f"{k} ({shown(saved.get(k))} -> {shown(self.settings.get(k))})"
                      for k in sorted(set(saved) | set(self.settings))
                      if saved.get(k) != self.settings.get(k)]
            raise JournalError(f"{self.path} holds runs made with other settings (they differ in "
                             f"{'; '.join(differ)}); resume with the same settings, or delete "
                             "the file (or choose another --out) to start afresh")

    def _write(self, record: dict[str, Any]) -> None:
        self._sink.write(json.dumps(record) + "\n")
        self._sink.flush()
        os.fsync(self._sink.fileno())

    def keep(self, run: dict[str, Any]) -> None:
        """Record a finished run."""
        self.done[self.key(run)] = run
        self._write(run)

    def close(self) -> None:
        self._sink.close()

    def __enter__(self) -> RunJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
