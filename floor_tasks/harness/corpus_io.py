"""Read run corpora and name the fixed vocabulary of their records.

A run corpus is a directory holding ``runs.jsonl`` (one run record per line) and
``metadata.json``. Records carry a ``schema_version``; only known versions are read.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "SCHEMA_VERSION",
    "TIERS",
    "FAILURE_CLASSES",
    "TASK_IDS",
    "RUNS_FILE",
    "TruncatedLineWarning",
    "tier_of_task",
    "read_records",
]

SCHEMA_VERSION = 1
"""The run-record schema version this module reads."""

TIERS: tuple[str, ...] = ("A0", "A", "B", "C", "D", "E")
"""The tier ladder, easiest first."""

FAILURE_CLASSES: dict[str, str] = {
    "F1": "hallucinated tool",
    "F2": "malformed call",
    "F3": "context amnesia",
    "F4": "loop (step budget exhausted)",
    "F5": "early resignation",
    "F6": "wrong tool",
    "F7": "partial",
}

TASK_IDS: tuple[str, ...] = tuple(
    [f"A0{i}" for i in range(1, 6)] + [f"{t}{i}" for t in "ABCDE" for i in range(1, 6)]
)
"""The 30 AgentFloor task ids in ladder order."""

RUNS_FILE = "runs.jsonl"


class TruncatedLineWarning(UserWarning):
    """The last line of a corpus file is not valid JSON (a write cut mid-line); it was skipped."""


def tier_of_task(task_id: str) -> str:
    """Return the tier of an AgentFloor task id (``"A03"`` → ``"A0"``, ``"C3"`` → ``"C"``).

    Raises:
        ValueError: for an id that is not one of :data:`TASK_IDS`.
    """
    if task_id not in TASK_IDS:
        raise ValueError(f"unknown task id {task_id!r}")
    return "A0" if task_id.startswith("A0") else task_id[0]


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
