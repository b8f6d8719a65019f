"""A corpus line is written whole or not at all: a record write that falls short (a full disk)
is undone and raised, so the run is not counted as done and a later record cannot join the cut
line into one the corpus refuses; a cut error line is dropped before the next error; a cut
line is found reading the file once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from floor_tasks.harness.corpus import RunCorpus, _drop_cut_line
from floor_tasks.harness.corpus_io import read_records, with_digest
from tests.helpers.records import record_json, synthetic_record


def test_a_short_write_is_cut_off_and_raised(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = RunCorpus(tmp_path)
    corpus.append(synthetic_record("A1", "A", True))
    size = corpus.runs_path.stat().st_size
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:100]))
    with pytest.raises(OSError, match="wrote 100 of"):
        corpus.append(synthetic_record("A2", "A", True))
    monkeypatch.undo()
    assert corpus.runs_path.stat().st_size == size
    assert corpus.done_ids() == {"m|A1|v0|0"}
    corpus.append(synthetic_record("A3", "A", True))  # the disk has room again
    assert [r.task_id for r in read_records(tmp_path)] == ["A1", "A3"]
    assert RunCorpus(tmp_path).done_ids() == {"m|A1|v0|0", "m|A3|v0|0"}


def test_a_cut_error_line_is_dropped_before_the_next_error(tmp_path: Path) -> None:
    errors = tmp_path / "errors.jsonl"
    errors.write_text('{"run_ids": ["m|A1|v0|0"], "error": "x"}\n{"run_ids": ["m|A2', "ascii")
    RunCorpus(tmp_path).log_error(["m|A3|v0|0"], "boom")
    assert [json.loads(line)["run_ids"] for line in errors.read_text("ascii").splitlines()] == [
        ["m|A1|v0|0"], ["m|A3|v0|0"]]


class _CountedReads:
    """A file whose ``read`` calls add the bytes they return to ``counts``."""

    def __init__(self, file: Any, counts: list[int]) -> None:
        self.file, self.counts = file, counts

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.counts.append(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)

    def __enter__(self) -> _CountedReads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def test_a_long_cut_line_is_found_reading_each_byte_once(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.jsonl"
    first = (json.dumps(with_digest(record_json("A1", "A", True))) + "\n").encode("ascii")
    runs.write_bytes(first + b"x" * (16 << 20))  # a cut line of 16 MiB (garbage, or hostile)
    counts: list[int] = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *args, **kwargs: _CountedReads(
        real_open(self, *args, **kwargs), counts))
    _drop_cut_line(runs)
    monkeypatch.undo()
    assert runs.read_bytes() == first
    assert sum(counts) <= len(first) + (16 << 20)  # the quadratic scan read 136 MiB
