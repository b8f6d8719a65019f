"""Write run corpora: ``runs.jsonl`` appended one record at a time, plus ``metadata.json``.

Each record is written with a single ``write`` on a file opened for appending, then flushed
and fsynced, so a crash (even SIGKILL) can cut at most the last line; a write that falls short
(a full disk) is cut off again and raised. Opening a corpus drops such a cut line (one without
its newline); its run is not in :meth:`RunCorpus.done_ids`, so a resumed sweep reruns it: no
record is lost and none is duplicated. A cut last line of ``errors.jsonl`` is dropped too, so
that the next error logged starts a line of its own. Any other damage is refused with a
:class:`~floor_tasks.harness.corpus_io.CorruptCorpusError` rather than appended to.

Lines are ASCII JSON (``ensure_ascii``): any ``str`` a model returns, a lone surrogate
included, is written as a ``\\uXXXX`` escape and reads back as the same ``str``.

One writer at a time: a sweep (and ``rescore`` writing its output) holds :func:`writer_lock`,
an exclusive ``flock`` on the corpus's ``.lock`` file, for as long as it writes; a second
writer is refused at once with a :class:`CorpusLockedError`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends.redaction import redact
from floor_tasks.harness.corpus_io import (
    RUNS_FILE,
    CorruptCorpusError,
    parse_json,
    read_records,
    with_digest,
)
from floor_tasks.harness.record import RunRecord

__all__ = ["RunCorpus", "CorpusLockedError", "METADATA_FILE", "ERRORS_FILE", "LOCK_FILE",
           "read_metadata", "write_records", "writer_lock"]

METADATA_FILE = "metadata.json"
ERRORS_FILE = "errors.jsonl"
LOCK_FILE = ".lock"
"""Held (``flock``) by the corpus's writer; left in place, since removing it would let two
writers lock two different files."""
_CHUNK = 1 << 20
"""Bytes read at a time when looking for a cut last line."""
_METADATA_MAPS = ("arms", "fingerprints", "probes", "seeds")
"""The fields of ``metadata.json`` that are objects, merged from one sweep to the next."""


class CorpusLockedError(OSError):
    """Another process is writing the corpus (holds its :data:`LOCK_FILE`)."""


@contextmanager
def writer_lock(directory: str | Path) -> Iterator[Path]:
    """Hold the corpus's exclusive writer lock for the block (the directory is made if
    missing); yields the directory.

    Raises:
        CorpusLockedError: at once, when another writer holds it.
    """
    corpus = Path(directory)
    corpus.mkdir(parents=True, exist_ok=True)
    fd = os.open(corpus / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CorpusLockedError(
                f"{corpus}: another sweep or rescore is writing this corpus (it holds "
                f"{corpus / LOCK_FILE}); wait for it to end, or write to another --out") from None
        yield corpus
    finally:
        os.close(fd)  # releases the lock


def _drop_cut_line(path: Path) -> None:
    """Truncate ``path`` after its last newline (removing a partially written line), reading
    back from its end one chunk at a time: linear time, constant memory."""
    if not path.exists():
        return
    with path.open("rb+") as fh:
        end = start = fh.seek(0, os.SEEK_END)
        while start:
            size = min(start, _CHUNK)
            start -= size
            fh.seek(start)
            cut = fh.read(size).rfind(b"\n")
            if cut != -1:
                if start + cut + 1 < end:
                    fh.truncate(start + cut + 1)
                return
        fh.truncate(0)


def _json_text(obj: Any, **options: Any) -> str:
    """``obj`` as ASCII-only JSON: every ``str``, lone surrogates included, is escaped."""
    return json.dumps(obj, ensure_ascii=True, default=str, **options)


def _append_line(path: Path, obj: Any) -> None:
    """Append ``obj`` as one line, whole or not at all: a short or failed write (a full disk)
    is cut off again and raised, so a later line cannot join it."""
    line = (_json_text(obj) + "\n").encode("ascii")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.fstat(fd).st_size
        try:
            if (written := os.write(fd, line)) != len(line):
                raise OSError(errno.ENOSPC, f"wrote {written} of {len(line)} bytes", str(path))
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)


class RunCorpus:
    """A run corpus directory, opened for appending (by the holder of its
    :func:`writer_lock`)."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.runs_path = self.dir / RUNS_FILE
        for path in (self.runs_path, self.dir / ERRORS_FILE):
            _drop_cut_line(path)
        self._done = {r.run_id for r in self.records()}

    def records(self) -> list[RunRecord]:
        """All records written so far (checked; the cut line was dropped on opening).

        Raises:
            CorruptCorpusError: when a line fails the integrity checks of
                :func:`~floor_tasks.harness.corpus_io.read_records`.
        """
        if not self.runs_path.exists():
            return []
        return read_records(self.runs_path)

    def done_ids(self) -> set[str]:
        """Run ids already recorded."""
        return set(self._done)

    def append(self, record: RunRecord) -> None:
        """Append one record, in its JSON form with its content digest; a run id already
        present is refused."""
        if record.run_id in self._done:
            raise ValueError(f"run {record.run_id!r} is already in {self.runs_path}")
        _append_line(self.runs_path, with_digest(record.to_json()))
        self._done.add(record.run_id)

    def log_error(self, run_ids: list[str], error: str, **details: Any) -> None:
        """Record a failure that left runs unfinished (they rerun on resume)."""
        _append_line(self.dir / ERRORS_FILE, {"run_ids": run_ids, "error": error, **details})

    def write_metadata(self, metadata: dict[str, Any]) -> None:
        """Write ``metadata.json`` (atomically, by rename)."""
        write_text_atomic(self.dir / METADATA_FILE, _json_text(redact(metadata), indent=2),
                          encoding="ascii")


def read_metadata(directory: str | Path) -> dict[str, Any]:
    """The ``metadata.json`` of a corpus, or ``{}`` when it has none yet.

    Raises:
        CorruptCorpusError: when it is not a JSON object (see
            :func:`~floor_tasks.harness.corpus_io.parse_json`), or one of its fields
            ``arms``, ``fingerprints``, ``probes``, ``seeds`` is not an object.
    """
    path = Path(directory) / METADATA_FILE
    if not path.exists():
        return {}
    metadata = parse_json(path.read_bytes(), path)
    if not isinstance(metadata, dict):
        raise CorruptCorpusError(path, None, "not a JSON object")
    for key in _METADATA_MAPS:
        if not isinstance(metadata.get(key, {}), dict):
            raise CorruptCorpusError(path, None, f"field {key!r} is not an object")
    return metadata


def write_records(directory: str | Path, records: Iterable[RunRecord]) -> Path:
    """Replace the ``runs.jsonl`` of a corpus with ``records`` at once (by rename), under its
    :func:`writer_lock`; returns the file.

    Raises:
        CorpusLockedError: when another process is writing the corpus.
    """
    text = "".join(_json_text(with_digest(r.to_json())) + "\n" for r in records)
    with writer_lock(directory) as corpus:
        return write_text_atomic(corpus / RUNS_FILE, text, encoding="ascii")
