"""``floor rescore``: a run whose actions do not finish its episode is one line, exit 2, and
nothing is written; a rescored record holds the call log, final answer and termination of the
replay its verdict was read from, not the stale ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from floor_tasks.harness.corpus_io import with_digest
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.rescore import rescore_record
from floor_tasks.harness.runner import run_episode


def test_an_unfinished_run_is_one_line_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = run_episode("B1", "oracle")
    cut = {**record, "actions": record["actions"][:-1]}  # the run's last turn is missing
    with pytest.raises(ValueError, match=r"agent\|B1\|v0\|0"):
        rescore_record(RunRecord.from_json(cut))
    (tmp_path / "runs.jsonl").write_text(json.dumps(with_digest(cut)) + "\n", encoding="ascii")
    assert main(["floor", "rescore", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "cannot re-score run agent|B1|v0|0: its actions do not finish the episode" in err
    assert not (tmp_path / "out").exists()


def test_the_rescored_trajectory_is_the_replayed_one() -> None:
    fresh = with_digest(run_episode("B1", "oracle"))
    stale = {**fresh, "call_log": [], "final_text": None, "termination": "final_answer"}
    stale.pop("content_digest")
    rescored = with_digest(rescore_record(RunRecord.from_json(stale)).to_json())
    for field in ("call_log", "final_text", "termination", "verdict", "passed"):
        assert rescored[field] == fresh[field], field


def test_the_rescored_corpus_carries_its_sources_metadata(tmp_path: Path) -> None:
    """It had none, or kept the metadata.json of whatever corpus --out held before."""
    source, out = tmp_path / "source", tmp_path / "out"
    source.mkdir()
    out.mkdir()
    record = with_digest(run_episode("B1", "oracle"))
    (source / "runs.jsonl").write_text(json.dumps(record) + "\n", encoding="ascii")
    (source / "metadata.json").write_text(json.dumps({"sweep_name": "mine"}), encoding="ascii")
    (out / "metadata.json").write_text(json.dumps({"sweep_name": "stale"}), encoding="ascii")
    assert main(["floor", "rescore", str(source), "--out", str(out)]) == 0
    metadata = json.loads((out / "metadata.json").read_text(encoding="ascii"))
    assert metadata == {"sweep_name": "mine", "rescored_from": str(source / "runs.jsonl")}
