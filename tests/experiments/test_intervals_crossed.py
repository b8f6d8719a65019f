"""The seeds-by-items interval of the experiments: every seed is scored on the same held-out
items (a crossed design), so its variance is the seeds' share plus the items', and its quantile
Student's t."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.common.intervals import INTERVAL, seed_item_interval, student_t_quantile


def width(interval: tuple[float, float]) -> float:
    return interval[1] - interval[0]


@pytest.mark.parametrize("row", [
    [1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
    [0.2, 0.9, 0.4, 0.0, 1.0, 0.7, 0.3, 0.8],
])
def test_seeds_that_repeat_one_row_are_no_surer_than_the_row_alone(row: list[float]) -> None:
    """Five seeds with identical scores on the same items know no more about the items than
    one: taking the items within each seed as independent would average five and narrow it."""
    one = seed_item_interval(np.array([row]))
    repeated = seed_item_interval(np.array([row] * 5))
    assert width(repeated) >= width(one) > 0
    assert repeated == one


def test_it_covers_the_population_mean_of_a_crossed_design() -> None:
    """Simulated experiments as the real ones are laid out: 5 seeds, the same 24 held-out
    items, each item's difficulty drawn from a population (mean 0.5), each seed solving an item
    with that probability. The 95% interval must cover 0.5 in at least 92% of 300 simulated
    experiments (it does in 96.7% with these seeds; redrawing the items within each seed
    covered 84.7%)."""
    rng = np.random.default_rng(123)
    seeds, items, experiments, hits = 5, 24, 300, 0
    for _ in range(experiments):
        difficulty = rng.beta(1.0, 1.0, size=items)
        table = (rng.random((seeds, items)) < difficulty).astype(float)
        low, high = seed_item_interval(table)
        hits += low <= 0.5 <= high
    assert hits / experiments >= 0.92


def test_it_covers_the_population_mean_with_decision_groups_and_seed_effects() -> None:
    """As above, with two decision groups of 10 items each (balanced success) and a training
    seed that shifts every item's chance alike."""
    rng = np.random.default_rng(11)
    seeds, experiments, hits = 5, 300, 0
    groups = [list(range(10)), list(range(10, 20))]
    for _ in range(experiments):
        chance = np.clip(rng.beta(1.0, 1.0, size=20) + rng.normal(0, 0.1, size=(seeds, 1)),
                         0, 1)
        table = (rng.random((seeds, 20)) < chance).astype(float)
        low, high = seed_item_interval(table, groups)
        hits += low <= 0.5 <= high
    assert hits / experiments >= 0.92


def test_groups_are_resampled_within_themselves() -> None:
    """Balanced success is the mean of the groups' means: a group solved everywhere and one
    failed everywhere give 0.5 on every draw, however many items each has."""
    table = np.array([[1.0] * 3 + [0.0] * 7] * 4)
    assert seed_item_interval(table, [[0, 1, 2], list(range(3, 10))]) == (0.5, 0.5)


def test_a_paired_difference_of_equal_methods_is_zero() -> None:
    rng = np.random.default_rng(0)
    first = rng.random((3, 16))
    assert seed_item_interval(first - first) == (0.0, 0.0)
    assert "Satterthwaite" in INTERVAL


def test_it_covers_the_mean_when_the_seeds_vary_most() -> None:
    """Three seeds, each shifting all 40 items alike (normal, sd 1), items alike: the
    two-way percentile bootstrap used before covered the mean in 78% of these experiments (a
    bootstrap of 3 seeds shrinks their variance by 2/3 and takes a normal quantile where t with
    2 degrees of freedom is due); the t interval must cover it in at least 90%."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(300):
        table = rng.normal(0, 1, (3, 1)) + rng.normal(0, 0.05, (3, 40))
        low, high = seed_item_interval(table)
        hits += low <= 0.0 <= high
    assert hits / 300 >= 0.9


def test_the_variance_is_the_seeds_share_plus_each_groups_items_share() -> None:
    """By hand: seed scores (mean of group means) 0.5, 0.75 and 0.25; item means 2/3, 1/3,
    1 and 0 in groups of two."""
    table = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    seeds = np.var([0.5, 0.75, 0.25], ddof=1) / 3
    items = [np.var([2 / 3, 1 / 3], ddof=1) / (2 * 4), np.var([1.0, 0.0], ddof=1) / (2 * 4)]
    variance = seeds + sum(items)
    dof = variance ** 2 / (seeds ** 2 / 2 + sum(v ** 2 / 1 for v in items))
    half = student_t_quantile(0.975, dof) * variance ** 0.5
    assert seed_item_interval(table, [[0, 1], [2, 3]]) == (round(0.5 - half, 3),
                                                           round(0.5 + half, 3))
    assert seed_item_interval(table, [[0, 1], [2, 3]], limits=(0.0, 1.0)) == (
        max(0.0, round(0.5 - half, 3)), min(1.0, round(0.5 + half, 3)))


@pytest.mark.parametrize(("p", "dof", "quantile"), [
    (0.975, 1, 12.706204736), (0.975, 2, 4.302652730), (0.975, 4, 2.776445105),
    (0.975, 2.5, 3.574654842), (0.975, 1e6, 1.959966), (0.9, 10, 1.372183641)])
def test_student_t_quantiles_match_the_tables(p: float, dof: float, quantile: float) -> None:
    assert student_t_quantile(p, dof) == pytest.approx(quantile, rel=1e-6)


def test_a_table_must_have_seeds_and_items() -> None:
    with pytest.raises(ValueError, match="seeds x items"):
        seed_item_interval(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="at least one item"):
        seed_item_interval(np.ones((2, 3)), [[0, 1, 2], []])


def test_the_committed_reasoning_results_are_summarized_from_their_runs(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--summarize`` rebuilds docs/teamtr_reasoning_results.json's summary from its runs,
    training nothing; the committed file is what it gives."""
    import json
    import shutil
    from pathlib import Path

    from trainers.experiments import teamtr_reasoning

    committed = Path(__file__).parents[2] / "docs" / "teamtr_reasoning_results.json"
    copy = tmp_path / "results.json"
    shutil.copy(committed, copy)
    monkeypatch.setattr(teamtr_reasoning, "run", None)  # nothing may train
    monkeypatch.setattr(teamtr_reasoning, "untrained", None)
    results = teamtr_reasoning.main(["--out", str(copy), "--summarize"])
    assert json.loads(copy.read_text()) == json.loads(committed.read_text()) == \
        json.loads(json.dumps(results))
    assert results["interval"] == INTERVAL
    tampered = json.loads(committed.read_text())
    tampered["summary"]["teamtr"]["greedy_reward"] = 0.5
    copy.write_text(json.dumps(tampered))
    with pytest.raises(ValueError, match="teamtr's greedy_reward"):
        teamtr_reasoning.main(["--out", str(copy), "--summarize"])


def test_the_committed_sim_to_real_results_are_summarized_from_their_runs(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--summarize`` rebuilds every entry of docs/sim_to_real_results.json (every task and
    agent) from its per-seed, per-item runs; the committed file is what it gives, and each
    entry's table is printed for the docs."""
    import json
    import shutil
    from pathlib import Path

    from trainers.experiments.sim_to_real.run import INTERVAL_TEXT, main

    committed = Path(__file__).parents[2] / "docs" / "sim_to_real_results.json"
    copy = tmp_path / "results.json"
    shutil.copy(committed, copy)
    main(["--summarize", str(copy)])
    rebuilt, stored = json.loads(copy.read_text()), json.loads(committed.read_text())
    assert rebuilt == stored
    assert all(entry["interval"] == INTERVAL_TEXT and "runs" in entry
               for entry in stored.values())
    assert "| real-capped+sim | 640 / 1,200 | 5,760 | 0.91 (0.66–1.00) |" in capsys.readouterr().out
    stored["mcp:crm"]["summary"]["sim"]["per_seed"][0] = 1.0
    copy.write_text(json.dumps(stored))
    with pytest.raises(ValueError, match="sim: its runs give"):
        main(["--summarize", str(copy)])
