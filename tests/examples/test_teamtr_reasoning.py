"""The TeamTR reasoning experiment on a tiny random LM: every method trains at the same budget,
the greedy held-out items are the trainer's own, and the summary comes out of the runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.reasoning import small_experiment
from trainers.common.args import ConfigError
from trainers.experiments import teamtr_reasoning

pytest.importorskip("reasoning_gym")
pytest.importorskip("peft")


def test_the_experiment_compares_methods_at_one_budget_on_unseen_items(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    results = teamtr_reasoning.main([
        *small_experiment(tiny_lm_dir, seeds=1, total_episodes=8,
                          methods="teamtr,stale_sequential", held_out=3, max_new_tokens=4),
        "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    runs, summary = results["runs"], results["summary"]
    assert set(runs) == {"untrained", "teamtr", "stale_sequential"}
    for method, seeds in runs.items():
        assert len(seeds) == 1 and all(len(run["items"]) == 3 for run in seeds)
        if method != "untrained":  # each spent the budget, in whole stages
            assert all(0 < run["episodes"] <= 8 and run["stages"] >= 1 for run in seeds)
        mean = np.mean([run["items"] for run in seeds])
        low, high = summary[method]["ci95"]
        assert summary[method]["greedy_reward"] == pytest.approx(mean, abs=1e-4)
        assert low <= mean <= high
    # TeamTR rolls out once per agent update, stale-sequential once per stage
    assert runs["teamtr"][0]["stages"] < runs["stale_sequential"][0]["stages"]
    diff = summary["teamtr - stale_sequential"]["difference"]
    assert diff == pytest.approx(summary["teamtr"]["greedy_reward"]
                                 - summary["stale_sequential"]["greedy_reward"], abs=1e-3)
    assert "stale_sequential - untrained" in summary


def test_an_interrupted_experiment_resumes_with_no_run_lost_or_repeated(
        tiny_lm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = small_experiment(tiny_lm_dir, seeds=2, total_episodes=8)
    whole = teamtr_reasoning.main([*argv, "--out", str(tmp_path / "whole.json")])
    trained = []
    run = teamtr_reasoning.run

    def interrupted(args, method, seed):
        if trained:
            raise KeyboardInterrupt  # stopped during the second training run
        trained.append((method, seed))
        return run(args, method, seed)

    out = tmp_path / "cut.json"
    monkeypatch.setattr(teamtr_reasoning, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        teamtr_reasoning.main([*argv, "--out", str(out)])
    assert not out.exists()
    monkeypatch.setattr(teamtr_reasoning, "run", lambda args, method, seed: (
        trained.append((method, seed)), run(args, method, seed))[1])
    resumed = teamtr_reasoning.main([*argv, "--out", str(out), "--resume"])
    assert trained == [("teamtr", 0), ("teamtr", 1)]  # each run once, across both calls
    journal = [json.loads(line) for line in (tmp_path / "cut.runs.jsonl").read_text().splitlines()]
    assert [(r["method"], r["seed"]) for r in journal[1:]] == [
        ("untrained", 0), ("untrained", 1), ("teamtr", 0), ("teamtr", 1)]

    def without_seconds(runs):
        return {m: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]
                for m, rs in runs.items()}

    assert without_seconds(resumed["runs"]) == without_seconds(whole["runs"])
    assert resumed["summary"] == whole["summary"]
    one_seed = list(argv)  # a subset of the runs: summarised from the journal, none run again
    one_seed[argv.index("--seeds") + 1] = "1"
    subset = teamtr_reasoning.main([*one_seed, "--out", str(out), "--resume"])
    assert trained == [("teamtr", 0), ("teamtr", 1)]
    assert without_seconds(subset["runs"]) == {
        m: rs[:1] for m, rs in without_seconds(whole["runs"]).items()}
    other_rank = list(argv)
    other_rank[argv.index("--lora-rank") + 1] = "4"
    with pytest.raises(ValueError, match="differ in lora_rank"):
        teamtr_reasoning.main([*other_rank, "--out", str(out), "--resume"])


def test_summarizing_a_missing_results_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nonexist.json"
    with pytest.raises(SystemExit, match=f"--summarize: no results file at {missing}"):
        teamtr_reasoning.main(["--out", str(missing), "--summarize"])


def test_the_advantages_std_reaches_each_trainer_and_a_bad_one_is_refused_before_any_run(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    args = teamtr_reasoning.parse_args(teamtr_reasoning.Args, ["--adv-std-ddof", "0"])
    assert all(teamtr_reasoning.trainer_args(args, method, 0).adv_std_ddof == 0
               for method in teamtr_reasoning.METHODS)
    default = teamtr_reasoning.parse_args(teamtr_reasoning.Args, [])
    assert teamtr_reasoning.trainer_args(default, "teamtr", 0).adv_std_ddof == 1
    out = tmp_path / "results.json"
    with pytest.raises(ConfigError, match="adv_std_ddof"):
        teamtr_reasoning.main([*small_experiment(tiny_lm_dir, seeds=1, total_episodes=8,
                                                 held_out=3, max_new_tokens=4),
                               "--adv-std-ddof", "2", "--out", str(out)])
    assert not out.with_name("results.runs.jsonl").exists()  # refused before the untrained run


def test_the_committed_journal_resumes_under_the_std_it_was_made_with(tmp_path: Path) -> None:
    """Its settings line predates --adv-std-ddof; its runs divided by the population std."""
    out = tmp_path / "results.json"
    docs = Path(__file__).resolve().parents[2] / "docs"
    shutil.copy(docs / "teamtr_reasoning_rerun.runs.jsonl", tmp_path / "results.runs.jsonl")
    argv = ["--prompts-per-rollout", "4", "--group-size", "4", "--total-episodes", "48",
            "--max-new-tokens", "16", "--update-epochs", "1", "--held-out", "32",
            "--methods", "teamtr", "--seeds", "1", "--out", str(out), "--resume"]
    with pytest.raises(ValueError, match=r"differ in adv_std_ddof \(0 -> 1\)"):
        teamtr_reasoning.main(argv)
    results = teamtr_reasoning.main([*argv, "--adv-std-ddof", "0"])  # every run is journaled
    assert results["summary"]["teamtr"]["greedy_reward"] == pytest.approx(0.059, abs=5e-4)
