"""Read run corpora, checking their integrity.

A run corpus is a directory holding ``runs.jsonl`` (one run record per line) and
``metadata.json``. Every reader (report, compare, rescore, resume) goes through
:func:`read_records`, which reads each line as a :class:`~floor_tasks.harness.record.RunRecord`
and refuses a corpus it cannot trust with a :class:`CorruptCorpusError` naming the file and
line: a line that is not UTF-8 or not JSON (except a cut last line, see
:class:`TruncatedLineWarning`), a record that is not a run record of the known
``schema_version`` (a field missing, unknown or of the wrong type), an unknown task, variant or
tier, a ``run_id`` that does not match the record's own model, task, variant and repeat, a
``run_id`` seen twice, and a record changed after it was written (its content digest).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from agentworld_envs.errors import FieldedError
from floor_tasks.harness.record import RecordError, RunRecord
from floor_tasks.task import Task, load_tasks

__all__ = ["RUNS_FILE", "DIGEST_FIELD", "CorruptCorpusError", "NoDigestWarning",
           "TruncatedLineWarning", "parse_json", "read_records", "runs_file", "with_digest"]

RUNS_FILE = "runs.jsonl"
"""The records file inside a corpus directory."""

DIGEST_FIELD = "content_digest"
"""The field of a corpus line holding :func:`record_digest` of the rest of the line."""


class CorruptCorpusError(FieldedError, ValueError):
    """A corpus file that cannot be trusted; ``str()`` is ``path:line: reason``.

    Attributes:
        path: the file.
        line: the 1-based line number, or None when the fault is not on one line.
        reason: what is wrong.
    """

    def __init__(self, path: str | Path, line: int | None, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")
        self.path, self.line, self.reason = Path(path), line, reason


class NoDigestWarning(UserWarning):
    """Records without a content digest (written before digests): a change to them that
    leaves a valid record cannot be detected."""


def record_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON, its digest field left out."""
    body = {key: value for key, value in record.items() if key != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def with_digest(record: dict[str, Any]) -> dict[str, Any]:
    """The record as a reader will see it (a JSON round trip), with its content digest."""
    seen = json.loads(json.dumps(record, ensure_ascii=True, default=str))
    seen.pop(DIGEST_FIELD, None)
    return {**seen, DIGEST_FIELD: record_digest(seen)}


class TruncatedLineWarning(UserWarning):
    """The file ends in a line without its newline that does not parse (a write cut mid-line,
    as a crash leaves it); it was skipped. A line that ends in a newline is never skipped."""


def runs_file(path: str | Path) -> Path:
    """The ``runs.jsonl`` of a corpus given as its directory or as the file itself."""
    file = Path(path)
    return file / RUNS_FILE if file.is_dir() else file


@functools.cache
def _tasks() -> dict[str, Task]:
    return {task.id: task for task in load_tasks()}


def parse_json(raw: bytes, file: Path, lineno: int | None = None) -> Any:
    """The JSON value of ``raw``: one line of ``file``, or the whole file when ``lineno`` is
    None.

    Raises:
        CorruptCorpusError: when it is not UTF-8 or not JSON, nested too deeply for the
            decoder, or holds an integer too long to convert.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCorpusError(file, lineno, f"invalid UTF-8 byte 0x{raw[exc.start]:02x} "
                                               f"at byte {exc.start + 1}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if lineno else f"line {exc.lineno} column {exc.colno}"
        raise CorruptCorpusError(file, lineno, f"invalid JSON: {exc.msg} ({where})") from None
    except RecursionError:
        raise CorruptCorpusError(file, lineno, "invalid JSON: nested too deeply") from None
    except ValueError:  # an integer past Python's digit limit
        raise CorruptCorpusError(file, lineno, "invalid JSON: an integer of more than "
                                 f"{sys.get_int_max_str_digits()} digits") from None


def _identity_problem(record: RunRecord) -> str | None:
    task = _tasks().get(record.task_id)
    if task is None:
        return f"unknown task_id {record.task_id!r}"
    if record.variant not in task.variant_names:
        return f"task {task.id} has no variant {record.variant!r}"
    if record.tier != task.tier:
        return f"tier {record.tier!r} is not task {task.id}'s tier {task.tier!r}"
    expected = f"{record.model}|{task.id}|{record.variant}|{record.repeat}"
    if record.run_id != expected:
        return f"run_id {record.run_id!r} does not match its fields ({expected!r})"
    return None


def _checked(data: Any, digest: str | None, first_line: dict[str, int]) -> RunRecord:
    """The record of one parsed line (its digest taken out); raises :class:`RecordError`
    naming its first fault."""
    record = RunRecord.from_json(data)
    problem = (f"duplicate run_id {record.run_id!r} (first at line {first_line[record.run_id]})"
               if record.run_id in first_line else _identity_problem(record))
    if problem:
        raise RecordError(problem)
    if digest is not None and digest != record_digest(data):
        raise RecordError("content digest mismatch: the record was changed after it was "
                          "written")
    return record


def read_records(path: str | Path) -> list[RunRecord]:
    """Read and check the run records of a corpus.

    Args:
        path: the corpus directory or its ``runs.jsonl`` file.

    Returns:
        The records, in file order. Blank lines are ignored.

    Raises:
        CorruptCorpusError: (a ``ValueError``) on the first line that fails a check (see the
            module docstring); the message names the file and line.

    Warns:
        TruncatedLineWarning: when the file ends in a cut line, which is skipped.
        NoDigestWarning: once, when records have no content digest (an older corpus).
    """
    file = runs_file(path)
    records: list[RunRecord] = []
    first_line: dict[str, int] = {}
    undigested = 0
    with file.open("rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                data = parse_json(raw, file, lineno)
            except CorruptCorpusError as exc:
                if raw.endswith(b"\n"):
                    raise
                warnings.warn(f"{file}:{lineno}: skipped a truncated last line ({exc.reason})",
                              TruncatedLineWarning, stacklevel=2)
                break
            digest = data.pop(DIGEST_FIELD, None) if isinstance(data, dict) else None
            try:
                record = _checked(data, digest, first_line)
            except RecordError as exc:
                raise CorruptCorpusError(file, lineno, str(exc)) from None
            undigested += digest is None
            first_line[record.run_id] = lineno
            records.append(record)
    if undigested:
        warnings.warn(f"{file}: {undigested} record(s) without a content digest (written before "
                      "digests): changes to them cannot be detected", NoDigestWarning,
                      stacklevel=2)
    return records
