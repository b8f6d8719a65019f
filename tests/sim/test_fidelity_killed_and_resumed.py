"""``agentworld sim fidelity --out DIR`` killed part-way after an earlier run's journal was deleted
(as the refusal to start afresh over it advises), and resumed.

The earlier run's ``fidelity.json`` stayed beside the new run's journal until the new run
ended, so a run stopped before then (killed, interrupted, or stopped by failed calls) left
another run's report to pass for its own.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from agentworld_envs.sim.fidelity_journal import JOURNAL, REPORT
from tests.helpers.examples import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
FIDELITY = ["sim", "fidelity", "--backend", "scripted", "--tasks", "A1,B2,C3,D4,E5", "--json"]
KILLED_CHILD = """
import pathlib, signal, sys
from agentworld_envs.cli import main
from agentworld_envs.sim.fidelity_journal import FidelityJournal
marker, scenarios, keep = pathlib.Path(sys.argv[1]), int(sys.argv[2]), FidelityJournal.keep
def kept(self, record):
    keep(self, record)
    if len(self.done) == scenarios:  # journaled: say so, and wait here to be killed
        marker.touch()
        signal.pause()
FidelityJournal.keep = kept
main(sys.argv[3:])
"""


def kill_after(scenarios: int, argv: list[str], marker: Path) -> None:
    """Run ``agentworld ARGV`` in a child process and SIGKILL it once its journal holds
    ``scenarios`` scenarios."""
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(marker), str(scenarios),
                              *argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + HANG_GUARD_S  # a hang guard only
    while child.poll() is None and not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL and marker.exists()


@pytest.mark.parametrize("scenarios", [1, 3])
def test_a_run_killed_over_an_earlier_ones_report_leaves_none_and_resumes_whole(
        scenarios: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole, out = tmp_path / "whole", tmp_path / "out"
    assert main([*FIDELITY, "--seed", "5", "--out", str(whole)]) == 0
    assert main([*FIDELITY, "--out", str(out)]) == 0
    (out / JOURNAL).unlink()  # to start afresh

    kill_after(scenarios, [*FIDELITY, "--seed", "5", "--out", str(out)], tmp_path / "killed")
    lines = (out / JOURNAL).read_text().splitlines()
    assert len(lines) == 1 + scenarios and json.loads(lines[0])["settings"]["seed"] == 5
    assert not (out / REPORT).exists()

    capsys.readouterr()
    assert main([*FIDELITY, "--seed", "5", "--out", str(out), "--resume"]) == 0
    assert (out / REPORT).read_text() == (whole / REPORT).read_text()
    indices = [json.loads(line)["index"] for line in (out / JOURNAL).read_text().splitlines()[1:]]
    assert sorted(indices) == list(range(5))
