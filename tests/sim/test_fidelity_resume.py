"""``agentworld sim fidelity --out DIR --resume``: an interrupted run goes on from its journal of
finished scenarios, playing only the others, and writes the report an uninterrupted run writes.
Before, the command had no ``--out`` and no ``--resume``: an interrupted run was redone whole."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, Completion, register_backend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.cli import main

# A1/v0 is played in 2 turns (a lookup, then its answer), C3/v0 in 3 (a lookup, a computation
# and the submission, each a world-model call): a Ctrl-C at C3's third leaves A1 finished
FIDELITY = ["sim", "fidelity", "--backend", "resume3_fidelity", "--tasks", "A1,C3", "--json"]


class Counting(ScriptedBackend):
    """The scripted placeholder, keeping the turn of each request it is asked (``asked``); a
    request for turn ``stop_at`` is a Ctrl-C."""

    asked: list[int] = []
    stop_at: int | None = None

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        for request in requests:
            turn = int(re.match(r"### Turn (\d+)", request.messages[-1]["content"])[1])
            if turn == self.stop_at:
                raise KeyboardInterrupt
            Counting.asked.append(turn)
        return super().complete(requests)


register_backend("resume3_fidelity", Counting)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(Counting, "asked", [])
    return Counting.asked


def fidelity(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main([*FIDELITY, *more])
    out, err = capsys.readouterr()
    return status, out, err


def test_an_interrupted_run_resumes_playing_only_its_unfinished_scenarios(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], counting: list[int],
        monkeypatch: pytest.MonkeyPatch) -> None:
    status, whole, _ = fidelity(capsys, "--out", str(tmp_path / "whole"))
    assert status == 0 and sorted(counting) == [1, 1, 2, 3]  # A1: turn 1; C3: turns 1-3
    counting.clear()
    monkeypatch.setattr(Counting, "stop_at", 3)
    out = tmp_path / "stopped"
    status, _, err = fidelity(capsys, "--out", str(out))
    assert status == 130 and f"the finished scenarios are kept in {out / 'scenarios.jsonl'}; " \
        "resume with: agentworld sim fidelity" in err and err.rstrip().endswith("--resume")
    lines = (out / "scenarios.jsonl").read_text().splitlines()
    assert [json.loads(line)["scenario"] for line in lines[1:]] == ["A1/v0"]
    assert not (out / "fidelity.json").exists()
    monkeypatch.setattr(Counting, "stop_at", None)
    counting.clear()
    status, resumed, _ = fidelity(capsys, "--out", str(out), "--resume")
    assert status == 0 and counting == [1, 2, 3]  # C3 alone, from its first turn
    assert resumed == whole and json.loads(resumed)["scenarios"]["A1/v0"]["steps"] == 1
    assert (out / "fidelity.json").read_text() == (tmp_path / "whole" / "fidelity.json").read_text()
    counting.clear()
    (out / "fidelity.json").unlink()
    status, again, _ = fidelity(capsys, "--out", str(out), "--resume")  # a finished run
    assert status == 0 and counting == [] and again == whole
    assert (out / "fidelity.json").read_text() == (tmp_path / "whole" / "fidelity.json").read_text()


def test_a_resume_that_cannot_go_on_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], counting: list[int]) -> None:
    assert fidelity(capsys, "--out", str(tmp_path))[0] == 0
    journal = (tmp_path / "scenarios.jsonl").read_text()
    for more, says in [
            (["--seed", "2", "--mode", "hybrid", "--resume"],
             "other settings (they differ in mode ('simulated' -> 'hybrid'); seed (0 -> 2)); "
             "resume with the same settings"),
            ([], f"{tmp_path / 'scenarios.jsonl'} holds 2 finished runs: pass --resume"),
    ]:
        status, _, err = fidelity(capsys, "--out", str(tmp_path), *more)
        assert status == 2 and err.count("\n") == 1 and says in err
        assert (tmp_path / "scenarios.jsonl").read_text() == journal  # kept as it was
    status, _, err = fidelity(capsys, "--resume")
    assert status == 2 and "--resume needs --out" in err
    status, _, err = fidelity(capsys, "--out", str(tmp_path / "new"), "--resume")
    assert status == 2 and "holds no scenarios.jsonl, so there is no run to resume" in err
