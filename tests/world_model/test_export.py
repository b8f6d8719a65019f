"""``wm export`` writes each transition once: runs that reach the same chat and get the same
answer (the same runs in two corpora, a gold step an explorer also plays) are one item."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.bench.items import load_items
from agentworld_envs.cli import main
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, run_jobs


def corpus(folder: Path, tasks: tuple[str, ...]) -> Path:
    runs = RunCorpus(folder)
    for record in run_jobs([Job(task_id=t, variant="v0", model="oracle") for t in tasks],
                           "oracle"):
        runs.append(record)
    return runs.dir


def exported(out: Path) -> list:
    return load_items(out / "train.jsonl") + load_items(out / "val.jsonl")


def test_export_writes_repeated_transitions_once_and_says_how_many(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = corpus(tmp_path / "a", ("A1", "C3", "E4"))
    again = corpus(tmp_path / "b", ("A1", "C3", "E4"))  # the same runs, recorded twice
    other = corpus(tmp_path / "c", ("C3", "B2"))  # C3 once more, and a task of its own
    assert main(["wm", "export", "--corpus", str(first), "--out", str(tmp_path / "one")]) == 0
    once = exported(tmp_path / "one")
    capsys.readouterr()
    argv = [a for c in (first, again, other) for a in ("--corpus", str(c))]
    assert main(["wm", "export", *argv, "--out", str(tmp_path / "all"),
                 "--val-fraction", "0.34"]) == 0
    items = exported(tmp_path / "all")
    chats = [(i.task, str(i.messages()), i.ground_truth) for i in items]
    assert len(set(chats)) == len(chats)  # no repeat, within or across the two files
    b2 = [i for i in items if i.source["task_id"] == "B2"]
    assert b2 and len(items) == len(once) + len(b2)  # every distinct transition kept
    dropped = len(once) + sum(i.source["task_id"] == "C3" for i in once)
    assert f"({dropped} repeated transitions left out;" in capsys.readouterr().out
