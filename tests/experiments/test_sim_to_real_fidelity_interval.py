"""The world-model evidence's ``eval`` writes the interval the docs quote beside its exact
score: the 95% Wilson interval over the scored items, from the script, not worked out beside it."""

from __future__ import annotations

import re

import pytest

from agentworld_envs.bench.items import load_items
from agentworld_envs.bench.sample import sample_path
from floor_tasks.harness.stats import wilson_interval
from trainers.experiments.world_model_evidence import _fidelity as fidelity


def test_fidelity_holds_the_exact_rates_wilson_interval_over_its_items() -> None:
    items = load_items(sample_path())[:6]
    asked = re.escape(items[2].messages()[-1]["content"][:40])
    right = f"<predicted_observation>\n{items[2].ground_truth}\n</predicted_observation>"
    backend = {"name": "scripted", "rules": [{"match": asked, "reply": right}]}
    result = fidelity(backend, items, "fine-tuned", 400)
    exact = sum(bool(record["fidelity"]["exact"]) for record in result["records"])
    rate = result["report"]["overall_weighted"]["exact"]
    assert exact >= 1 and rate == pytest.approx(100 * exact / len(items), abs=1e-3)
    low, high = result["exact_wilson95"]
    assert low < rate < high
    assert [low, high] == [pytest.approx(100 * b, abs=0.05)
                           for b in wilson_interval(exact, len(items))]
