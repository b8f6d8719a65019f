"""An ``--out`` or ``--report`` that is (or lies under) a file is bad input: one line, exit 2,
before anything runs or is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.cli import main


@pytest.mark.parametrize(("command", "option"), [
    (["run", "--tasks", "A1", "--no-progress", "--out", "{file}"], "--out"),
    (["run", "--tasks", "A1", "--no-progress", "--out", "{corpus}", "--report", "{file}"],
     "--report"),
    (["run", "--tasks", "A1", "--no-progress", "--out", "{file}/sub"], "--out"),
    (["report", "{corpus}", "--out", "{file}"], "--out"),
    (["rescore", "{corpus}", "--out", "{file}/sub"], "--out"),
], ids=["run-out", "run-report", "run-out-under-file", "report-out", "rescore-out"])
def test_an_out_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          command: list[str], option: str) -> None:
    file, corpus = tmp_path / "notes.txt", tmp_path / "corpus"
    file.write_text("mine", encoding="utf-8")
    if command[0] != "run":  # a corpus to read
        assert main(["floor", "run", "--tasks", "A1", "--no-progress", "--out", str(corpus)]) == 0
    before = sorted(tmp_path.rglob("*"))
    capsys.readouterr()
    argv = [arg.format(file=file, corpus=corpus) for arg in command]
    assert main(["floor", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"argument {option}: {file} exists and is not a directory" in err
    assert sorted(tmp_path.rglob("*")) == before and file.read_text(encoding="utf-8") == "mine"
