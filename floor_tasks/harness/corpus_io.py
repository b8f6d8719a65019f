"""Read run corpora.

A run corpus is a directory holding ``runs.jsonl`` (one run record per line) and
``metadata.json``. Records carry a ``schema_version``; only known versions are read.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "RUNS_FILE", "TruncatedLineWarning", "read_records"]

SCHEMA_VERSION = 1
"""The run-record schema version this module reads."""

RUNS_FILE = "runs.jsonl"
"""The records file inside a corpus directory."""


class TruncatedLineWarning(UserWarning):
    """The last line of a corpus file is not valid JSON (a write cut mid-line); it was skipped."""


def _check_record(record: Any, where: str) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a run record must be a JSON object")
    version = record.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"{where}: unknown schema_version {version!r} (this reader knows {SCHEMA_VERSION})"
        )
    return record


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read the run records of a corpus.

    Args:
        path: the corpus directory or its ``runs.jsonl`` file.

    Returns:
        The records, in file order. Blank lines are ignored.

    Raises:
        ValueError: on a line that is not valid JSON (except the last one), a line that is not
            an object, or a record whose ``schema_version`` is unknown; the message names the
            file and line.

    Warns:
        TruncatedLineWarning: when the last non-blank line is not valid JSON, as left by a
            write cut mid-line; that line is skipped.
    """
    file = Path(path)
    if file.is_dir():
        file = file / RUNS_FILE
    records: list[dict[str, Any]] = []
    bad_line: tuple[int, json.JSONDecodeError] | None = None
    with file.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if bad_line is not None:
                raise ValueError(f"{file}:{bad_line[0]}: invalid JSON: {bad_line[1].msg}")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                bad_line = (lineno, exc)
                continue
            records.append(_check_record(record, f"{file}:{lineno}"))
    if bad_line is not None:
        warnings.warn(
            f"{file}:{bad_line[0]}: skipped a truncated last line (invalid JSON)",
            TruncatedLineWarning,
            stacklevel=2,
        )
    return records
