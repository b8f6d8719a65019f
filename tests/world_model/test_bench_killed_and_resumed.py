"""``wm bench`` and ``wm fidelity`` killed part-way into an ``--out`` that holds an earlier run's
results, and resumed.

Only Ctrl-C removed the earlier run's ``records.jsonl`` and report, so a killed run left them
beside its own journal, to pass for its results; and Ctrl-C removed them even when the run read
its ``--predictions`` from that ``records.jsonl``, so the printed resume command then failed on
the missing file, and the world model's outputs were lost.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, Completion, register_backend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.bench.items import item_from_dict, write_items
from agentworld_envs.bench.journal import JOURNAL
from agentworld_envs.cli import main
from tests.helpers.examples import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
N = 6
RESULTS = ("records.jsonl", "report.json", "report.md")
KILLED_CHILD = """
import pathlib, signal, sys
from agentworld_envs.bench.journal import BenchJournal
from agentworld_envs.cli import main
marker, lines, kept, write = pathlib.Path(sys.argv[1]), int(sys.argv[2]), [], BenchJournal._write
def _write(self, entry):
    write(self, entry)
    kept.append(entry)
    if len(kept) == lines:  # journaled: say so, and wait here to be killed
        marker.touch()
        signal.pause()
BenchJournal._write = _write
main(sys.argv[3:])
"""


def verdict(score: int) -> str:
    scores = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), score)
    return f"<final_evaluation>{json.dumps({'scores': scores})}</final_evaluation>"


def judge(high: str) -> str:
    """A scripted judge that gives 5 to the items ``high`` matches and 2 to the others."""
    return json.dumps({"name": "scripted", "rules": [{"match": high, "reply": verdict(5)},
                                                     {"match": ".", "reply": verdict(2)}]})


EARLIER, LATER = judge(r"act [0-2]\b"), judge(r"act [3-5]\b")


@pytest.fixture
def items_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    return write_items([item_from_dict({
        "task": "floor", "id": i, "prompt": [f"### Turn 1\n\n**Action:**\nact {i}"],
        "response": [f'**Environment Observation:**\n{{"n": {i}}}'],
        "current_prompt": f"### Turn 1\n\n**Action:**\nact {i}", "system_str": "You simulate.",
        "turn_idx": 1, "total_turns": 1}) for i in range(N)], tmp_path / "items.jsonl")


def command(name: str, items: Path, out: Path, judged_by: str) -> list[str]:
    argv = ["wm", name, str(items), "--backend", "scripted", "--batch-size", "1", "--seed", "7",
            "--no-progress", "--out", str(out)]
    return [*argv, "--judge", judged_by] if name == "bench" else argv


def kill_after(lines: int, argv: list[str], marker: Path) -> None:
    """Run ``agentworld ARGV`` in a child process and SIGKILL it once its journal holds
    ``lines`` lines."""
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(marker), str(lines), *argv],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + HANG_GUARD_S  # a hang guard only
    while child.poll() is None and not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL and marker.exists()


# (command, journal lines when killed: the settings and some outputs, or some verdicts too)
KILLS = [("bench", 2), ("bench", 1 + N + 2), ("fidelity", 4)]


@pytest.mark.parametrize(("name", "lines"), KILLS)
def test_a_run_killed_over_an_earlier_one_leaves_none_of_its_results_and_resumes_whole(
        name: str, lines: int, items_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    whole, out = tmp_path / "whole", tmp_path / "out"
    assert main(command(name, items_file, whole, LATER)) == 0
    assert main(command(name, items_file, out, EARLIER)) == 0
    assert not (out / JOURNAL).exists()  # finished: a new run may go into the folder

    kill_after(lines, command(name, items_file, out, LATER), tmp_path / "killed")
    assert (out / JOURNAL).is_file()
    assert [result for result in RESULTS if (out / result).exists()] == []

    capsys.readouterr()
    assert main([*command(name, items_file, out, LATER), "--resume"]) == 0
    for result in RESULTS[:2 if name == "fidelity" else 3]:
        assert (out / result).read_text() == (whole / result).read_text(), result
    assert not (out / JOURNAL).exists()


class Interrupting(ScriptedBackend):
    """The scripted judge, interrupted (Ctrl-C) when asked about item ``stop``."""

    stop: int | None = None

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        for request in requests:
            if re.findall(r"act (\d+)", request.messages[-1]["content"])[-1] == str(self.stop):
                raise KeyboardInterrupt
        return super().complete(requests)


register_backend("killed_and_resumed_judge", Interrupting)


def test_ctrl_c_keeps_the_predictions_the_run_reads_from_its_out_and_it_resumes(
        items_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out, whole = tmp_path / "out", tmp_path / "whole"
    assert main(command("fidelity", items_file, out, "")) == 0
    predictions = out / "records.jsonl"
    outputs = predictions.read_text()
    rules = json.loads(LATER)["rules"]
    bench = ["wm", "bench", str(items_file), "--predictions", str(predictions), "--judge",
             json.dumps({"name": "killed_and_resumed_judge", "rules": rules}), "--batch-size",
             "1", "--no-progress", "--out"]
    assert main([*bench, str(whole)]) == 0

    monkeypatch.setattr(Interrupting, "stop", 3)
    assert main([*bench, str(out)]) == 130
    assert predictions.read_text() == outputs  # the world model's outputs are kept
    monkeypatch.setattr(Interrupting, "stop", None)
    capsys.readouterr()
    assert main([*bench, str(out), "--resume"]) == 0, capsys.readouterr().err
    for result in RESULTS:
        assert (out / result).read_text() == (whole / result).read_text(), result
