"""The journal of a ``wm bench`` or ``wm fidelity`` run, so that an interrupted run resumes with
no output or verdict lost or asked for twice.

Each world-model output and each settled judge result is appended to ``OUT/journal.jsonl`` as
soon as it arrives, one flushed and fsynced JSON line each: ``{"key": K, "output": TEXT}`` or
``{"key": K, "judge": {"attempts": N, "raw": TEXT}}`` (with ``reason`` and ``error`` for a
verdict still unreadable after its attempts). Line 1 holds the run's settings, each as a
SHA-256 of its JSON (so no backend setting is written out in the clear). A judge result
that the judge *backend* failed to give is not settled, and a failed world-model call leaves no
line: a resumed run (``--resume``) asks for those again, and for nothing else. A last line
without its newline was cut by the interruption: it counts as not written and is cut from the
file. Any other damage, a key written twice, and settings that differ are refused. The journal
is removed once a run ends with every call answered (``records.jsonl`` then holds it all).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from agentworld_envs.bench.items import BenchFormatError
from agentworld_envs.bench.judge import (
    JUDGE_BACKEND_ERROR,
    JudgeParseError,
    JudgeResult,
    parse_judge_output,
)
from agentworld_envs.cli_errors import UsageError

__all__ = ["JOURNAL", "BenchJournal", "fingerprint"]

JOURNAL = "journal.jsonl"


def fingerprint(value: Any) -> str:
    """The SHA-256 of ``value``'s canonical JSON: a setting compared without being stored."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class BenchJournal:
    """The outputs and judge results a run has, by item key, kept in ``folder/journal.jsonl``.

    Args:
        folder: The run's output folder; None keeps nothing (a run without ``--out``).
        settings: What makes results comparable, by name (JSON-like values); their
            fingerprints are line 1, checked on resuming.
        keys: The run's item keys.
        resume: Go on with the journal in ``folder``; without it, a journal there is refused.
    """

    def __init__(self, folder: str | Path | None, settings: dict[str, Any],
                 keys: Collection[str], resume: bool = False) -> None:
        self.outputs: dict[str, str] = {}
        self.verdicts: dict[str, JudgeResult] = {}
        self.path = Path(folder) / JOURNAL if folder else None
        self._sink: Any = None
        if self.path is None:
            if resume:
                raise UsageError("--resume needs --out, the folder of the run to resume")
            return
        settings = {name: fingerprint(value) for name, value in settings.items()}
        exists = self.path.exists() and self.path.stat().st_size > 0
        if exists and not resume:
            raise UsageError(f"{self.path} holds the journal of an unfinished run: pass "
                             "--resume to go on with it, or choose another --out")
        if resume and not self.path.exists():
            raise UsageError(f"--resume: {self.path.parent} holds no {JOURNAL}, so there is no "
                             "unfinished run to resume there")
        started = resume and self._read(settings, set(keys))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sink = self.path.open("a" if started else "w", encoding="utf-8")
        if not started:
            self._write({"settings": settings})

    def _read(self, settings: dict[str, Any], keys: set[str]) -> bool:
        """Load the journal's entries (a cut last line is cut from the file); whether it had
        its settings line."""
        assert self.path is not None
        data = self.path.read_bytes()
        whole = data.rfind(b"\n") + 1
        lines = data[:whole].split(b"\n")[:-1]
        for number, line in enumerate(lines, 1):
            where = f"{self.path}:{number}"
            try:
                entry = json.loads(line.decode("utf-8"))
            except ValueError:
                raise BenchFormatError(f"{where}: not a journal line; remove the journal to "
                                       "start afresh") from None
            if number == 1:
                self._check(entry, settings, where)
            else:
                self._load(entry, keys, where)
        if whole < len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(whole)
        return bool(lines)

    @staticmethod
    def _check(entry: Any, settings: dict[str, Any], where: str) -> None:
        saved = entry.get("settings") if isinstance(entry, dict) else None
        if not isinstance(saved, dict):
            raise BenchFormatError(f"{where}: the journal does not start with its settings")
        differ = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
        if differ:
            raise UsageError(f"--resume: this run's settings differ from the journal's in "
                             f"{', '.join(differ)}; resume with the same ones, or run afresh "
                             "into another --out")

    def _load(self, entry: Any, keys: set[str], where: str) -> None:
        key = entry.get("key") if isinstance(entry, dict) else None
        if key not in keys:
            raise BenchFormatError(f"{where}: not an entry for an item of this run")
        if "output" in entry and isinstance(entry["output"], str):
            kept, value = self.outputs, entry["output"]
        else:
            kept, value = self.verdicts, _result(entry.get("judge"), where)
        if key in kept:
            raise BenchFormatError(f"{where}: {key} is in the journal twice (were two runs "
                                   "writing it?); remove the journal to start afresh")
        kept[key] = value

    def _write(self, entry: dict[str, Any]) -> None:
        self._sink.write(json.dumps(entry) + "\n")
        self._sink.flush()
        os.fsync(self._sink.fileno())

    def add_output(self, key: str, output: str) -> None:
        """Keep a world-model output."""
        self.outputs[key] = output
        if self._sink is not None:
            self._write({"key": key, "output": output})

    def add_verdict(self, key: str, result: JudgeResult) -> None:
        """Keep a settled judge result (one that the judge backend failed to give is not)."""
        if result.reason == JUDGE_BACKEND_ERROR:
            return
        self.verdicts[key] = result
        if self._sink is not None:
            judged = {"attempts": result.attempts, "raw": result.raw}
            if result.verdict is None:
                judged.update(reason=result.reason, error=result.error)
            self._write({"key": key, "judge": judged})

    def __enter__(self) -> BenchJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, finished: bool = False) -> None:
        """Close the file; ``finished`` (every call answered) also removes it."""
        if self._sink is not None:
            self._sink.close()
            self._sink = None
            if finished:
                assert self.path is not None
                self.path.unlink()


def _result(judged: Any, where: str) -> JudgeResult:
    """A judge result back from its journal form (a verdict is read again from its text)."""
    try:
        if judged.get("reason"):
            return JudgeResult(None, judged["attempts"], judged["reason"], judged["error"],
                               judged["raw"])
        return JudgeResult(parse_judge_output(judged["raw"]), judged["attempts"],
                           raw=judged["raw"])
    except (AttributeError, KeyError, TypeError, JudgeParseError):
        raise BenchFormatError(f"{where}: not a journal entry (an output or a judge result)"
                               ) from None
