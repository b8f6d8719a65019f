"""The TeamTR reasoning experiment on a tiny random LM: every method trains at the same budget,
the greedy held-out items are the trainer's own, and the summary comes out of the runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainers.experiments import teamtr_reasoning

pytest.importorskip("reasoning_gym")
pytest.importorskip("peft")


def test_the_experiment_compares_methods_at_one_budget_on_unseen_items(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    results = teamtr_reasoning.main([
        "--model", str(tiny_lm_dir), "--n-agents", "2", "--held-out", "3", "--seeds", "1",
        "--methods", "teamtr,stale_sequential",
        "--total-episodes", "8", "--prompts-per-rollout", "2", "--group-size", "2",
        "--max-new-tokens", "4", "--lora-rank", "2", "--update-epochs", "1",
        "--torch-threads", "1",
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
