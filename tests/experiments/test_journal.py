"""The experiments' journal of finished runs: an interrupted experiment resumes with no run
lost or run twice, and never mixes runs made under other settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.run_journal import RunJournal


def _key(run: dict) -> tuple:
    return run["method"], run["seed"]


def _runs(n: int) -> list[dict]:
    return [{"method": "teamtr", "seed": seed, "items": [seed / 10]} for seed in range(n)]


def test_a_resumed_journal_holds_every_finished_run_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with RunJournal(path, _key, {"budget": 96}) as journal:
        for run in _runs(2):
            journal.keep(run)
    with RunJournal(path, _key, {"budget": 96}, resume=True) as journal:
        assert journal.done == {("teamtr", 0): _runs(2)[0], ("teamtr", 1): _runs(2)[1]}
        journal.keep(_runs(3)[2])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [{"settings": {"budget": 96}}, *_runs(3)]


def test_a_journal_that_holds_runs_is_refused_without_resume_not_emptied(
        tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with RunJournal(path, _key, {"budget": 96}) as journal:
        for run in _runs(3):
            journal.keep(run)
    whole = path.read_text()
    with pytest.raises(ValueError, match=r"holds 3 finished runs: pass --resume .* delete"):
        RunJournal(path, _key, {"budget": 96})
    assert path.read_text() == whole
    with RunJournal(path, _key, {"budget": 96}, resume=True) as journal:
        assert len(journal.done) == 3


def test_a_journal_cut_within_its_settings_line_starts_afresh_under_the_new_settings(
        tmp_path: Path) -> None:
    """Killed while writing the settings: no run is kept, and the settings are written anew,
    so that the next resume checks them."""
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"settings": {"budget": 96}})[:20])
    with RunJournal(path, _key, {"budget": 192}, resume=True) as journal:
        assert journal.done == {}
        journal.keep(_runs(1)[0])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [{"settings": {"budget": 192}}, _runs(1)[0]]
    with RunJournal(path, _key, {"budget": 192}, resume=True) as journal:
        assert list(journal.done) == [("teamtr", 0)]
    with pytest.raises(ValueError, match=r"differ in budget \(192 -> 96\)"):
        RunJournal(path, _key, {"budget": 96}, resume=True)


def test_a_run_cut_off_mid_line_is_dropped_and_done_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with RunJournal(path, _key, {"budget": 96}) as journal:
        journal.keep(_runs(1)[0])
    whole = path.read_text()
    path.write_text(whole + json.dumps(_runs(2)[1])[:17])  # killed while writing seed 1
    with RunJournal(path, _key, {"budget": 96}, resume=True) as journal:
        assert list(journal.done) == [("teamtr", 0)]
        journal.keep(_runs(2)[1])
    assert [json.loads(line) for line in path.read_text().splitlines()][1:] == _runs(2)


def test_a_damaged_line_before_the_last_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"settings": {}}\n{"method": "te\n' + json.dumps(_runs(1)[0]) + "\n")
    with pytest.raises(ValueError, match=r"runs.jsonl:2: not a JSON line"):
        RunJournal(path, _key, {}, resume=True)


def test_resuming_under_other_settings_is_refused_and_names_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with RunJournal(path, _key, {"budget": 96, "seeds": 3}) as journal:
        journal.keep(_runs(1)[0])
    with pytest.raises(ValueError, match=r"differ in budget \(96 -> 192\)"):
        RunJournal(path, _key, {"budget": 192, "seeds": 3}, resume=True)
    assert len(path.read_text().splitlines()) == 2  # nothing lost


def test_a_whole_record_missing_its_newline_is_redone_not_joined_to_the_next(
        tmp_path: Path) -> None:
    """A record is written with its newline in one call: one without it was cut off, however
    much of it there is, and the next record must not land on its line."""
    path = tmp_path / "runs.jsonl"
    with RunJournal(path, _key, {"budget": 96}) as journal:
        journal.keep(_runs(1)[0])
    path.write_text(path.read_text() + json.dumps(_runs(2)[1]))  # killed before the newline
    with RunJournal(path, _key, {"budget": 96}, resume=True) as journal:
        assert list(journal.done) == [("teamtr", 0)]
        journal.keep(_runs(2)[1])
    with RunJournal(path, _key, {"budget": 96}, resume=True) as journal:
        assert journal.done == {("teamtr", 0): _runs(2)[0], ("teamtr", 1): _runs(2)[1]}


def test_runs_without_the_settings_they_were_made_with_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(_runs(1)[0]) + "\n")
    with pytest.raises(ValueError, match="not the settings they were made with"):
        RunJournal(path, _key, {"budget": 96}, resume=True)
    with RunJournal(path, _key, resume=True) as journal:  # a journal that keeps no settings
        assert list(journal.done) == [("teamtr", 0)]
