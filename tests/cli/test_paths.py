"""Output folders and paths on the command line: a file where a folder is expected, or an
empty path, is one line, exit status 2, naming the flag. Before, ``--out /etc/passwd``-like
paths of ``sim fidelity``, ``wm bench``, ``wm fidelity`` and ``wm export`` ended with exit
status 1 and ``[Errno 17] File exists``; ``floor run --out ''`` wrote its corpus into the
working directory; a folder given for a file (``wm fidelity --predictions DIR``) exited 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.cli import main


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("x\n")
    return path


@pytest.mark.parametrize("argv", [
    ["sim", "fidelity", "--backend", "scripted", "--tasks", "A1", "--out", "{file}"],
    ["wm", "fidelity", "SAMPLE", "--backend", "scripted", "--out", "{file}"],
    ["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted", "--out",
     "{file}/sub"],
    ["wm", "export", "--corpus", "unused", "--out", "{file}"],
])
def test_an_output_folder_that_is_a_file_is_one_line(
        argv: list[str], a_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([arg.format(file=a_file) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"argument --out: {a_file} exists and is not a directory" in err, err


@pytest.mark.parametrize("argv", [
    ["floor", "run", "--tasks", "A1", "--out", ""],
    ["floor", "run", "--tasks", "A1", "--out", "{tmp}/runs", "--report", ""],
    ["wm", "export", "--corpus", "unused", "--out", ""],
])
def test_an_empty_output_folder_is_refused(argv: list[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": an empty path names no directory" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_trl_output_dir_that_is_a_file_is_one_line(
        a_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trl")
    assert main(["wm", "sft", "--train", "unused", "--output_dir", str(a_file)]) == 2
    assert capsys.readouterr().err == (f"agentworld: error: output_dir: {a_file} "
                                       "exists and is not a directory\n")


def test_a_folder_given_for_a_file_is_a_usage_error(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wm", "fidelity", "SAMPLE", "--predictions", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"agentworld: error: {tmp_path}: is a directory (check "
                                       "the path)\n")


def test_a_new_output_folder_is_still_taken(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new" / "fidelity"
    assert main(["wm", "fidelity", "SAMPLE", "--backend", "scripted", "--out", str(out)]) == 0
    assert (out / "report.json").is_file()
