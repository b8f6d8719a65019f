"""Ladder and routing intervals count a task as one cluster: its variants and repeats are
correlated runs (under greedy decoding a task's repeats agree), so the pass-rate interval is
Wilson's over the effective number of runs (runs over the design effect, within [tasks, runs];
the tasks at 0% or 100%), and the routing difference is Newcombe's from those intervals with the
tasks' correlation. Counting every run as independent, 5 tasks x 3 greedy repeats covered the
tasks' mean rate about 62% of the time at 95%, and 20 repeats of 5 tasks made two models
"equivalent" within 10 pp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.report import build_report
from floor_tasks.harness.stats import diff_ci, pass_rate_ci, wilson_interval
from tests.helpers.records import synthetic_record

PRICES = {"big": {"price_in_per_mtok": 10.0, "price_out_per_mtok": 30.0},
          "small": {"price_in_per_mtok": 0.1, "price_out_per_mtok": 0.3}}


def runs(passes: dict[str, list[bool]]) -> tuple[list[bool], list[str]]:
    """Outcomes and their task labels, task by task."""
    outcomes = [o for task in passes for o in passes[task]]
    return outcomes, [task for task in passes for _ in passes[task]]


def test_the_interval_is_wilson_over_the_design_effect_adjusted_runs() -> None:
    # 3 tasks: 3/3, 1/3, 0/2 -> p = 4/8; residuals y - p m = 1.5, -0.5, -1; the ratio
    # estimator's variance 3/2 * 3.5 / 64; n_eff = 0.25 / that = 64/21 (between 3 and 8).
    outcomes, tasks = runs({"t1": [True] * 3, "t2": [True, False, False], "t3": [False] * 2})
    ci = pass_rate_ci(outcomes, clusters=tasks)
    assert (ci.passed, ci.n, ci.clusters) == (4, 8, 3)
    assert ci.n_eff == pytest.approx(64 / 21)
    assert (ci.low, ci.high) == (pytest.approx(0.12663, abs=1e-5), pytest.approx(0.87337, abs=1e-5))
    assert str(ci) == "50% [13%, 87%] (4/8)"
    independent = pass_rate_ci(outcomes)
    assert independent.low > 0.2 and (independent.clusters, independent.n_eff) == (8, 8)


def test_a_design_effect_below_one_gives_wilson_over_the_runs_not_narrower() -> None:
    outcomes, tasks = runs({"t1": [True, False], "t2": [False, True], "t3": [True, False]})
    ci = pass_rate_ci(outcomes, clusters=tasks)
    assert ci.n_eff == 6 and (ci.low, ci.high) == wilson_interval(3, 6)


@pytest.mark.parametrize("seed", range(5))
def test_one_run_per_task_is_exactly_wilson_over_the_runs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    outcomes = (rng.random(int(rng.integers(1, 40))) < rng.random()).tolist()
    ci = pass_rate_ci(outcomes, clusters=[f"task{i}" for i in range(len(outcomes))])
    assert (ci.low, ci.high) == wilson_interval(sum(outcomes), len(outcomes))
    assert ci.n_eff == ci.n == ci.clusters and ci == pass_rate_ci(outcomes)


@pytest.mark.parametrize("passed", [True, False])
def test_every_run_alike_counts_each_task_once(passed: bool) -> None:
    outcomes, tasks = runs({f"t{i}": [passed] * 3 for i in range(5)})  # 15 runs, 5 tasks
    ci = pass_rate_ci(outcomes, clusters=tasks)
    assert (ci.low, ci.high) == wilson_interval(5 if passed else 0, 5)
    assert (ci.n, ci.clusters, ci.n_eff) == (15, 5, 5)
    assert pass_rate_ci(outcomes, clusters=["one"] * 15).n_eff == 1


def _record(model: str, task: str, passed: bool, repeat: int, tier: str = "A") -> RunRecord:
    return synthetic_record(task, tier, passed, model, repeat,
                            usage={"input_tokens": 100, "output_tokens": 50, "total_tokens": 150})


def test_the_ladder_of_5_tasks_times_3_greedy_repeats_all_passing_is_wilson_5_of_5() -> None:
    records = [_record("m", f"A{t}", True, r) for t in range(1, 6) for r in range(3)]
    report = build_report(records)
    cell = report.ladder["m"]["A"]
    assert str(cell) == "100% [57%, 100%] (15/15)"  # counted as 15 independent runs: [80%, 100%]
    md = report.markdown()
    assert "counts a task as one cluster" in md and "| m | n/a | 5 / 5.0 |" in md
    # one run per task: Wilson over the runs, and no note
    once = build_report([_record("m", f"A{t}", t % 2 == 0, 0) for t in range(1, 6)]).markdown()
    assert "40% [12%, 77%] (2/5)" in once and "cluster" not in once


def test_the_ladder_covers_the_tasks_mean_rate_under_greedy_repeats() -> None:
    # 5 tasks x 3 repeats, task rates ~ Beta(2, 2) (mean 0.5), greedy: one draw per task copied.
    rng = np.random.default_rng(2026)
    covered = 0
    replicates = 200
    for _ in range(replicates):
        task_passes = rng.random(5) < rng.beta(2, 2, size=5)
        records = [_record("m", f"A{t + 1}", bool(task_passes[t]), r)
                   for t in range(5) for r in range(3)]
        cell = build_report(records).ladder["m"]["A"]
        covered += cell.low <= 0.5 <= cell.high
    assert covered / replicates > 0.85  # about 0.94 (0.62 counting every run as independent)


def test_greedy_repeats_give_the_paired_difference_of_the_tasks() -> None:
    a = [True, True, False, True, False, False, True, True]
    b = [True, False, False, True, False, True, True, True]
    tasks = [f"t{i}" for i in range(len(a)) for _ in range(4)]
    repeated = diff_ci([x for x in a for _ in range(4)], [x for x in b for _ in range(4)],
                       paired=True, clusters_a=tasks)
    once = diff_ci(a, b, paired=True)
    assert (repeated.low, repeated.high) == (pytest.approx(once.low), pytest.approx(once.high))
    runs_as_independent = diff_ci([x for x in a for _ in range(4)],
                                  [x for x in b for _ in range(4)], paired=True)
    assert repeated.high - repeated.low > 1.8 * (runs_as_independent.high
                                                 - runs_as_independent.low)


def test_the_unpaired_difference_combines_the_clustered_intervals() -> None:
    a, tasks_a = runs({"t1": [True] * 4, "t2": [True, True, False, False], "t3": [False] * 4})
    b, tasks_b = runs({"u1": [True, False], "u2": [False, False]})
    ci_a, ci_b = pass_rate_ci(a, clusters=tasks_a, confidence=0.9), pass_rate_ci(
        b, clusters=tasks_b, confidence=0.9)
    diff = diff_ci(a, b, clusters_a=tasks_a, clusters_b=tasks_b, confidence=0.9)
    estimate = ci_a.rate - ci_b.rate
    assert diff.low == pytest.approx(estimate - math.hypot(ci_a.rate - ci_a.low,
                                                           ci_b.high - ci_b.rate))
    assert diff.high == pytest.approx(estimate + math.hypot(ci_a.high - ci_a.rate,
                                                            ci_b.rate - ci_b.low))


def test_clusters_are_one_label_per_run_and_shared_by_paired_arms() -> None:
    with pytest.raises(ValueError, match="clusters must hold one label per outcome, got 2 labels "
                                         "for 3 outcomes"):
        pass_rate_ci([True, False, True], clusters=["a", "b"])
    with pytest.raises(ValueError, match="paired outcomes share their cases' clusters"):
        diff_ci([True, False], [True, True], paired=True, clusters_a=["a", "b"],
                clusters_b=["a", "a"])


def _tier(model: str, tasks: int, repeats: int, failed: set[tuple[int, int]]) -> list[RunRecord]:
    return [_record(model, f"T{t:02d}", (t, r) not in failed, r)
            for t in range(tasks) for r in range(repeats)]


def test_repeats_of_few_tasks_do_not_make_models_equivalent_agreement_on_many_tasks_does() -> None:
    # small fails one repeat of one task: 99/100 against 100/100. Counting every run, the 90%
    # interval of the difference was [-4.4, +1.7] pp, "equivalent": 5 tasks cannot show that.
    records = _tier("big", 5, 20, set()) + _tier("small", 5, 20, {(0, 0)})
    route = build_report(records, prices=PRICES).routes[0]
    assert (route.best, route.chosen, route.equivalent) == ("big", "big", ("big",))
    assert route.diff.high > 0.3
    # 40 tasks x 3 repeats: both pass tasks 0-19 and fail 20-39, run for run
    failed = {(t, r) for t in range(20, 40) for r in range(3)}
    records = _tier("big", 40, 3, failed) + _tier("small", 40, 3, failed)
    route = build_report(records, prices=PRICES).routes[0]
    assert route.chosen == "small" and set(route.equivalent) == {"big", "small"}
    assert -0.1 < route.diff.low < 0 < route.diff.high < 0.1
