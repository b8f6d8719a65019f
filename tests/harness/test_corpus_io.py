"""Reading run corpora: directories or files, truncated last lines, bad lines, schema versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floor_tasks.harness.corpus_io import CorruptCorpusError, TruncatedLineWarning, read_records
from tests.helpers.records import record_json

TIERS = {"A1": "A", "A2": "A", "A3": "A", "B2": "B"}


def line(task_id: str, version: int = 1) -> str:
    """A valid record of ``task_id`` (model m, variant v0, repeat 0)."""
    return json.dumps(record_json(task_id, TIERS[task_id], True, schema_version=version)) + "\n"


def corpus(tmp_path: Path, text: str) -> Path:
    (tmp_path / "runs.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "metadata.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_reads_directory_or_file(tmp_path: Path) -> None:
    folder = corpus(tmp_path, line("A1") + "\n" + line("B2"))
    assert [r.task_id for r in read_records(folder)] == ["A1", "B2"]
    assert read_records(folder / "runs.jsonl") == read_records(str(folder))


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    folder = corpus(tmp_path, line("A1") + line("A2") + line("A3")[:25])
    with pytest.warns(TruncatedLineWarning, match=r"runs\.jsonl:3: skipped a truncated"):
        records = read_records(folder)
    assert [r.task_id for r in records] == ["A1", "A2"]


def test_only_a_line_without_its_newline_counts_as_cut(tmp_path: Path) -> None:
    with pytest.warns(TruncatedLineWarning, match=":3:"):
        assert len(read_records(corpus(tmp_path, line("A1") + "\n" + '{"schema_ver'))) == 1
    with pytest.raises(CorruptCorpusError, match=r"runs\.jsonl:2: invalid JSON"):
        read_records(corpus(tmp_path, line("A1") + '{"schema_ver\n\n'))


def test_bad_middle_line_raises(tmp_path: Path) -> None:
    folder = corpus(tmp_path, line("A1") + "not json\n" + line("A3"))
    with pytest.raises(ValueError, match=r"runs\.jsonl:2: invalid JSON"):
        read_records(folder)


def test_unknown_schema_version_raises(tmp_path: Path) -> None:
    folder = corpus(tmp_path, line("A1") + line("A2", version=2))
    with pytest.raises(ValueError, match=r"runs\.jsonl:2: unknown schema_version 2"):
        read_records(folder)
    with pytest.raises(ValueError, match="unknown schema_version None"):
        read_records(corpus(tmp_path, '{"task_id": "A1"}\n'))


def test_non_object_line_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r":1: a run record must be a JSON object"):
        read_records(corpus(tmp_path, "[1, 2]\n" + line("A1")))


def test_empty_corpus(tmp_path: Path) -> None:
    assert read_records(corpus(tmp_path, "")) == []
