"""``examples/sim_to_real.py --resume``: an interrupted experiment goes on from its journal of
finished runs (arm x seed), with no run lost or run twice, and writes the results an
uninterrupted run writes. Before, a killed run had to be redone from the start."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.cli import run_command
from trainers.experiments.sim_to_real import main, run

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--seeds", "2", "--updates", "2", "--batch", "4", "--world-model", "scripted"]
C1 = [*FAST, "--floor-records", "4,8",
      "--arms", "untrained,sim,sim-fixture,real-capped,real-capped+sim"]
MCP = [*FAST, "--task", "mcp:inventory", "--mcp-train", "2", "--mcp-eval", "4",
       "--arms", "sim,sim-shuffled,real,real-capped+sim"]
STOPPED_CHILD = """
import pathlib, sys, time
from trainers.experiments.sim_to_real import run
marker, made, original = pathlib.Path(sys.argv[1]), [], run.run_arm
def run_arm(*args, **kwargs):
    made.append(1)
    if len(made) == 2:  # the first run is over: say so, and wait here to be killed
        marker.touch()
        time.sleep(3600)
    return original(*args, **kwargs)
run.run_arm = run_arm
run.main(sys.argv[2:])
"""


def experiment(*argv: str) -> int:
    return run_command(lambda: main(list(argv)))


def results(out: Path) -> dict[str, Any]:
    """``results.json`` without its timings, and the folder it was written to."""
    def untimed(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if k != "seconds"}
        return [untimed(v) for v in value] if isinstance(value, list) else value

    data = untimed(json.loads((out / "results.json").read_text()))
    del data["args"]["out"]
    return data


def journaled(out: Path) -> list[tuple[str, int]]:
    return [(line["arm"], line["seed"]) for line in
            map(json.loads, (out / "runs.jsonl").read_text().splitlines()[1:])]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The runs (arm, seed) made in this process."""
    made: list[tuple[str, int]] = []
    original = run.run_arm

    def run_arm(args: Any, task: Any, arm: str, seed: int, world_model: Any) -> Any:
        made.append((arm, seed))
        return original(args, task, arm, seed, world_model)

    monkeypatch.setattr(run, "run_arm", run_arm)
    return made


def test_a_killed_run_resumes_to_the_results_of_an_uninterrupted_one(
        tmp_path: Path, counted: list[tuple[str, int]]) -> None:
    assert experiment("--out", str(tmp_path / "whole"), *C1) == 0
    everything = list(counted)
    killed = tmp_path / "killed"
    second = tmp_path / "second run begun"
    child = subprocess.Popen([sys.executable, "-c", STOPPED_CHILD, str(second), "--out",
                              str(killed), *C1],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while child.poll() is None and not second.exists():
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    assert journaled(killed) == everything[:1]
    counted.clear()
    assert experiment("--out", str(killed), *C1, "--resume") == 0
    assert counted == everything[1:]  # the journaled run is not made again
    assert sorted(journaled(killed)) == sorted(everything)  # each run once
    assert results(killed) == results(tmp_path / "whole")


def test_an_mcp_run_stopped_by_an_error_resumes_and_a_finished_one_rewrites_its_results(
        tmp_path: Path, counted: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    assert experiment("--out", str(tmp_path / "whole"), *MCP) == 0
    everything, original = list(counted), run.run_arm
    counted.clear()

    def fails_on_the_fourth(*args: Any) -> Any:
        if len(counted) == 3:
            raise RuntimeError("the machine went down")
        return original(*args)

    monkeypatch.setattr(run, "run_arm", fails_on_the_fourth)
    with pytest.raises(RuntimeError, match="went down"):
        experiment("--out", str(tmp_path / "stopped"), *MCP)
    monkeypatch.setattr(run, "run_arm", original)
    assert journaled(tmp_path / "stopped") == everything[:3]
    assert experiment("--out", str(tmp_path / "stopped"), *MCP, "--resume") == 0
    assert results(tmp_path / "stopped") == results(tmp_path / "whole")
    (tmp_path / "stopped" / "results.json").unlink()
    assert experiment("--out", str(tmp_path / "stopped"), *MCP, "--resume") == 0  # finished
    assert results(tmp_path / "stopped") == results(tmp_path / "whole")
    assert sorted(journaled(tmp_path / "stopped")) == sorted(everything)


def test_resuming_with_other_settings_is_refused_in_one_line_naming_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quick = [*FAST, "--arms", "untrained", "--seeds", "1"]
    assert experiment("--out", str(tmp_path), *quick) == 0
    capsys.readouterr()
    assert experiment("--out", str(tmp_path), *quick, "--updates", "3", "--batch", "5",
                      "--resume") == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "differ in batch (" in error and "; updates (" in error
    assert journaled(tmp_path) == [("untrained", 0)]  # kept as it was
    # more seeds are more runs, not other settings
    assert experiment("--out", str(tmp_path), *quick, "--seeds", "2", "--resume") == 0
    assert journaled(tmp_path) == [("untrained", 0), ("untrained", 1)]


def test_without_resume_a_run_starts_afresh_as_before(
        tmp_path: Path, counted: list[tuple[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    quick = [*FAST, "--arms", "untrained", "--seeds", "1"]
    assert experiment("--out", str(tmp_path), *quick) == 0
    assert experiment("--out", str(tmp_path), *quick) == 0
    assert counted == [("untrained", 0)] * 2 and journaled(tmp_path) == [("untrained", 0)]
    assert "starting afresh, its finished runs are dropped" in capsys.readouterr().out
