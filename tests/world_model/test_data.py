"""Transition export: real ground truth, the floor domain's exact chat, a leak-free split."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.bench.cli import add_commands
from agentworld_envs.bench.items import load_items
from agentworld_envs.bench.report import MACRO_LABEL, WEIGHTED_LABEL
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.bench.transitions import (
    corpus_transitions,
    record_transitions,
    split_by_task,
    task_of,
)
from floor_tasks import solution
from floor_tasks.env import FloorEnv
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, run_jobs

TASKS = ("A1", "C3", "E4")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    folder = RunCorpus(tmp_path_factory.mktemp("corpus"))
    jobs = [Job(task_id=t, variant=v, model="oracle") for t in TASKS for v in ("v0", "v1")]
    for record in run_jobs(jobs, "oracle"):
        folder.append(record)
    return folder


def test_corpus_transitions_hold_the_real_observations(corpus: RunCorpus) -> None:
    items = corpus_transitions([corpus.dir], start_id=5)
    assert [i.id for i in items] == list(range(5, 5 + len(items)))
    c3 = [i for i in items if i.source["task_id"] == "C3" and i.source["variant"] == "v0"]
    env = FloorEnv("C3", variant="v0")
    env.reset(seed=0)
    real = [env.step(a)[0] for a in solution("C3", "v0")]
    assert [i.ground_truth for i in c3] == real
    assert [i.turn_idx for i in c3] == list(range(1, len(real) + 1))
    assert all(i.total_turns == len(real) and i.task == "floor" for i in c3)


def test_replay_mismatch_is_refused(corpus: RunCorpus) -> None:
    record = next(r for r in corpus.records() if r.task_id == "C3")
    record.trajectory.call_log[0]["status"] = "error"
    with pytest.raises(ValueError, match="replaying its actions"):
        record_transitions(record)


class Capture(Backend):
    """A world model that answers nothing useful but records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.requests += requests
        return [Completion(text="<predicted_observation>x</predicted_observation>")
                for _ in requests]


def test_exported_chat_is_what_the_floor_domain_sends(corpus: RunCorpus) -> None:
    tools = ["lookup_record", "compute_value", "submit_decision"]
    capture = Capture()
    env = gym.make("AgentWorld/Floor-v0", backend=capture, mode="hybrid", real_tools=tools)
    env.reset(seed=0, options={"scenario": "C3/v0"})
    for action in solution("C3", "v0"):
        env.step(action)
    items = [i for i in corpus_transitions([corpus.dir])
             if (i.source["task_id"], i.source["variant"]) == ("C3", "v0")]
    assert [r.messages for r in capture.requests] == [i.messages() for i in items]


def test_split_by_task_never_leaks(corpus: RunCorpus) -> None:
    items = corpus_transitions([corpus.dir]) + load_sample()
    for seed in range(5):
        train, val = split_by_task(items, 0.34, seed)
        assert train and val and len(train) + len(val) == len(items)
        assert not {task_of(i) for i in train} & {task_of(i) for i in val}
    again = split_by_task(items, 0.34, 3)
    assert [i.key for i in again[1]] == [i.key for i in split_by_task(items, 0.34, 3)[1]]
    assert split_by_task(items, 0.0, 0)[1] == []
    with pytest.raises(ValueError):
        split_by_task(items, 1.0)


def test_simulated_items_take_real_truth_and_simulated_history() -> None:
    floor = [i for i in load_sample() if i.source.get("kind") == "simulated"
             and i.task == "floor"]
    later = [i for i in floor if i.turn_idx > 1]
    assert floor and all(i.source["ground_truth"] == "real" for i in floor)
    search = [i for i in load_sample() if i.task == "search"]
    assert all(i.source["ground_truth"] == "world_model" for i in search)
    assert all(i.response[i.turn_idx - 1].startswith("**Environment Observation:**")
               for i in later + search)


def test_export_command_writes_a_task_split(corpus: RunCorpus, tmp_path, capsys) -> None:
    parser = argparse.ArgumentParser()
    add_commands(parser)
    args = parser.parse_args(["export", "--corpus", str(corpus.dir), "--out", str(tmp_path),
                              "--val-fraction", "0.34"])
    assert args.handler(args) == 0
    train, val = load_items(tmp_path / "train.jsonl"), load_items(tmp_path / "val.jsonl")
    assert not {i.source["task_id"] for i in train} & {i.source["task_id"] for i in val}
    assert "training and" in capsys.readouterr().out


def test_fidelity_command_on_the_sample_with_saved_predictions(tmp_path, capsys) -> None:
    sample = load_sample()
    predictions = tmp_path / "records.jsonl"
    predictions.write_text("".join(json.dumps({"key": i.key, "output": i.ground_truth}) + "\n"
                                   for i in sample))
    parser = argparse.ArgumentParser()
    add_commands(parser)
    args = parser.parse_args(["fidelity", "SAMPLE", "--predictions", str(predictions),
                              "--out", str(tmp_path / "report")])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert f"| **{MACRO_LABEL}** |" in out and f"| **{WEIGHTED_LABEL}** |" in out
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["overall_weighted"]["exact"] == 100.0


def test_export_refuses_a_corpus_without_transitions_and_writes_nothing(
        corpus: RunCorpus, tmp_path, capsys) -> None:
    from agentworld_envs.cli import main

    empty = RunCorpus(tmp_path / "empty").dir
    (empty / "runs.jsonl").write_text("")
    out = tmp_path / "data"
    for corpora in ([empty], [corpus.dir, empty]):
        argv = [arg for c in corpora for arg in ("--corpus", str(c))]
        assert main(["wm", "export", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"agentworld: error: {empty}: no transitions to export (the corpus holds " \
                      "no run with a tool call)\n"
        assert not out.exists()
    assert main(["wm", "export", "--corpus", str(corpus.dir), "--out", str(out),
                 "--val-fraction", "1"]) == 2
    assert "--val-fraction: must be at least 0 and below 1, not 1" in capsys.readouterr().err
    assert not out.exists()
