"""The typed run record: old corpora load, readers give the same output, bad records are refused.

``tests/fixtures/corpus_v1`` holds two corpora written by the runner before records were typed
(schema_version 1): the oracle and an agent that answers in plain text, on A01 and A1. Its
``expected`` folder holds what ``report`` (ladder and Markdown) and ``compare`` printed over
them then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from floor_tasks.harness.compare import compare_corpora
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.corpus_io import DIGEST_FIELD, CorruptCorpusError, read_records
from floor_tasks.harness.record import RecordError, RunRecord
from floor_tasks.harness.report import render_ladder_text, render_markdown
from floor_tasks.harness.rescore import rescore
from floor_tasks.harness.runner import Job, run_jobs
from tests.helpers.records import record_json

V1 = Path(__file__).parents[1] / "fixtures" / "corpus_v1"


def test_a_v1_corpus_loads_into_run_records_and_writes_back_the_same_lines() -> None:
    for name in ("oracle", "lazy"):
        lines = [json.loads(line) for line in (V1 / name / "runs.jsonl").read_text().splitlines()]
        records = read_records(V1 / name)
        assert all(isinstance(r, RunRecord) for r in records) and len(records) == 2
        assert [r.to_json() for r in records] == [
            {k: v for k, v in line.items() if k != DIGEST_FIELD} for line in lines]
    oracle, lazy = read_records(V1 / "oracle"), read_records(V1 / "lazy")
    assert [r.trajectory.termination for r in oracle] == ["final_answer", "final_answer"]
    assert [(r.passed, r.verdict.failure_class) for r in lazy] == [(False, "F5"), (False, "F5")]


def test_report_and_compare_over_a_v1_corpus_print_what_they_printed_before() -> None:
    oracle, lazy = read_records(V1 / "oracle"), read_records(V1 / "lazy")
    expected = V1 / "expected"
    assert render_ladder_text(oracle + lazy) + "\n" == (expected / "ladder.txt").read_text()
    assert render_markdown(oracle + lazy) == (expected / "report.md").read_text()
    compared = [compare_corpora(oracle, lazy).render(), compare_corpora(lazy, oracle).render()]
    assert "\n".join(compared) + "\n" == (expected / "compare.txt").read_text()
    assert rescore(oracle + lazy)[1] == []


def test_the_runner_writes_a_run_record_of_the_current_version(tmp_path: Path) -> None:
    [record] = run_jobs([Job("A1", model="oracle")], "oracle")
    assert isinstance(record, RunRecord) and record.passed
    RunCorpus(tmp_path).append(record)
    line = json.loads((tmp_path / "runs.jsonl").read_text())
    assert line["schema_version"] == 1 and line["actions"] == record.trajectory.actions
    assert read_records(tmp_path) == [record]


@pytest.mark.parametrize("changes, reason", [
    ({"schema_version": 2}, "unknown schema_version 2 (this reader knows 1)"),
    ({"schema_version": True}, "unknown schema_version True"),
    ({"verdict": None}, "field 'verdict': input should be a valid dictionary"),
    ({"usage": {"input_tokens": 1, "output_tokens": 1}}, "missing field 'usage.total_tokens'"),
    ({"actions": ["ok", 3]}, "field 'actions[1]': input should be a valid string, got int"),
    ({"turns": "2"}, "field 'turns': input should be a valid integer, got str"),
    ({"repeat": False}, "field 'repeat': input should be a valid integer, got bool"),
    ({"mood": "good"}, "unknown field 'mood'"),
])
def test_a_newer_or_malformed_record_is_refused_naming_the_field(changes: dict,
                                                                 reason: str) -> None:
    with pytest.raises(RecordError) as caught:
        RunRecord.from_json(record_json("A1", "A", True, **changes))
    assert str(caught.value).startswith(reason)


@pytest.mark.parametrize("missing, reason", [
    ("schema_version", "unknown schema_version None (this reader knows 1)"),
    ("termination", "missing field 'termination'"),
    ("verdict", "missing field 'verdict'"),
])
def test_a_record_missing_a_field_is_refused(missing: str, reason: str) -> None:
    data = record_json("A1", "A", True)
    del data[missing]
    with pytest.raises(RecordError) as caught:
        RunRecord.from_json(data)
    assert str(caught.value) == reason


def test_a_corpus_of_a_newer_version_is_refused_at_its_line(tmp_path: Path) -> None:
    lines = (V1 / "oracle" / "runs.jsonl").read_text().splitlines(keepends=True)
    newer = {**json.loads(lines[1]), "schema_version": 2}
    (tmp_path / "runs.jsonl").write_text(lines[0] + json.dumps(newer) + "\n")
    with pytest.raises(CorruptCorpusError) as caught:
        read_records(tmp_path)
    assert caught.value.line == 2
    assert caught.value.reason == "unknown schema_version 2 (this reader knows 1)"
