"""A journal of an experiment's finished runs, one JSON line each, so that an interrupted
experiment resumes with no run lost or run twice.

The first line holds the experiment's settings; resuming under other settings is refused, since
the runs would not be comparable. A run is written and flushed as soon as it finishes; a last
line cut off by the interruption is dropped on resuming (that run is done again).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

__all__ = ["RunJournal"]


class RunJournal:
    """Finished runs, by key, kept in a JSON-lines file.

    Args:
        path: The journal file.
        key: A run's identity, from its record (for example its method and seed).
        settings: What makes runs comparable; written first, checked on resuming.
        resume: Keep the runs already in ``path`` (else start it afresh).

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
                 settings: dict[str, Any] | None = None, resume: bool = False) -> None:
        self.path, self.key = Path(path), key
        self.settings = json.loads(json.dumps(settings)) if settings is not None else None
        self.done: dict[Hashable, dict[str, Any]] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            self._read()
            self._sink = self.path.open("a", encoding="utf-8")
        else:
            self._sink = self.path.open("w", encoding="utf-8")
            if self.settings is not None:
                self._write({"settings": self.settings})

    def _read(self) -> None:
        """Load the finished runs. A last line without its newline was cut off by the
        interruption (a record is written with its newline in one call): it is cut from the
        file, and its run is done again."""
        text = self.path.read_text(encoding="utf-8")
        *whole, cut = text.split("\n")
        header = False
        for number, line in enumerate(whole, 1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                raise ValueError(f"{self.path}:{number}: not a JSON line; remove the file to "
                                 "start the experiment afresh") from None
            if number == 1 and "settings" in record:
                header = True
                self._check(record["settings"])
            else:
                self.done[self.key(record)] = record
        if self.settings is not None and not header and self.done:
            raise ValueError(f"{self.path} holds runs but not the settings they were made with; "
                             "start afresh without --resume")
        if cut:
            with self.path.open("r+b") as handle:
                handle.truncate(len(text.encode("utf-8")) - len(cut.encode("utf-8")))

    def _check(self, saved: dict[str, Any]) -> None:
        if self.settings is not None and saved != self.settings:
            differ = sorted(k for k in set(saved) | set(self.settings)
                            if saved.get(k) != self.settings.get(k))
            raise ValueError(f"{self.path} holds runs made with other settings (they differ in "
                             f"{', '.join(differ)}); resume with the same settings, or start "
                             "afresh without --resume")

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
