"""Bootstrap statistics and the corpus report (ladder, histograms, cost, routing, plot)."""

from __future__ import annotations

import numpy as np
import pytest

from floor_tasks.harness.report import (
    OVERALL,
    build_report,
    render_ladder_text,
    render_markdown,
    write_report,
)
from floor_tasks.harness.stats import diff_ci, equivalence_test, pass_rate_ci
from floor_tasks.task import TIERS

FAST = 2_000  # bootstrap resamples in tests
TIER_OF = {f"{tier}{i}": tier for tier in TIERS for i in range(1, 6)}  # A01.., A1.., .., E5


def run(model: str, task_id: str, passed: bool, repeat: int = 0, tokens: int = 100) -> dict:
    """A minimal synthetic run record."""
    return {
        "schema_version": 1, "run_id": f"{model}|{task_id}|v0|{repeat}", "model": model,
        "task_id": task_id, "tier": TIER_OF[task_id], "variant": "v0", "repeat": repeat,
        "termination": "final_answer" if passed else "step_budget_exhausted", "turns": 2,
        "usage": {"input_tokens": tokens, "output_tokens": tokens // 2,
                  "total_tokens": tokens + tokens // 2},
        "latency_s": 0.5, "wall_s": 0.6, "passed": passed,
        "verdict": {"passed": passed, "failure_class": None if passed else "F4",
                    "failure_labels": [] if passed else ["step_budget"], "checks": {}},
    }


def corpus(model: str, pass_rate: float, repeats: int = 4, tokens: int = 100) -> list[dict]:
    """Every task × ``repeats``; in each tier the first ``pass_rate`` share of runs pass."""
    records = []
    for tier in TIERS:
        cases = [(t, r) for t in TIER_OF if TIER_OF[t] == tier for r in range(repeats)]
        n_pass = round(pass_rate * len(cases))
        records += [run(model, t, i < n_pass, r, tokens) for i, (t, r) in enumerate(cases)]
    return records


# --- stats ---------------------------------------------------------------------------------


@pytest.mark.parametrize("passed,n", [(7, 10), (0, 8), (8, 8), (33, 50)])
def test_rate_ci_contains_estimate(passed: int, n: int) -> None:
    ci = pass_rate_ci([True] * passed + [False] * (n - passed), resamples=FAST)
    assert 0 <= ci.low <= ci.rate <= ci.high <= 1
    assert (ci.passed, ci.n) == (passed, n)


def test_rate_ci_shrinks_with_n() -> None:
    widths = [
        pass_rate_ci([True] * (7 * k) + [False] * (3 * k), resamples=FAST) for k in (1, 10, 100)
    ]
    assert widths[0].high - widths[0].low > widths[1].high - widths[1].low
    assert widths[1].high - widths[1].low > widths[2].high - widths[2].low


def test_rate_ci_under_five_runs_is_uninformative() -> None:
    ci = pass_rate_ci([True, True, True, True])
    assert (ci.low, ci.high, ci.rate) == (0.0, 1.0, 1.0)
    assert str(pass_rate_ci([])) == "n/a"


def test_rate_ci_is_seeded_and_matches_index_resampling() -> None:
    outcomes = [True] * 13 + [False] * 7
    assert pass_rate_ci(outcomes) == pass_rate_ci(outcomes)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(outcomes), size=(10_000, len(outcomes)))
    naive = np.quantile(np.asarray(outcomes)[idx].mean(axis=1), [0.025, 0.975])
    ci = pass_rate_ci(outcomes)
    assert ci.low == pytest.approx(naive[0], abs=0.051)
    assert ci.high == pytest.approx(naive[1], abs=0.051)


def test_diff_ci_paired_and_unpaired() -> None:
    a = [True] * 20 + [False] * 20
    same = diff_ci(a, a, paired=True, resamples=FAST)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    unpaired = diff_ci(a, a, resamples=FAST)
    assert unpaired.low < 0 < unpaired.high
    better = diff_ci([True] * 40, a, paired=True, resamples=FAST)
    assert better.estimate == 0.5 and better.low <= 0.5 <= better.high
    with pytest.raises(ValueError, match="equal lengths"):
        diff_ci(a, a[:-1], paired=True)
    assert (diff_ci(a[:3], a).low, diff_ci(a[:3], a).high) == (-1.0, 1.0)


def test_equivalence_test() -> None:
    a = [True] * 90 + [False] * 10
    assert equivalence_test(a, a, paired=True, resamples=FAST).equivalent
    assert not equivalence_test([True] * 100, [False] * 50 + [True] * 50, resamples=FAST).equivalent
    assert not equivalence_test(a[:4], a[:4], paired=True).equivalent  # too few runs
    assert equivalence_test(a, a, margin=0.0, paired=True, resamples=FAST).equivalent


# --- report ----------------------------------------------------------------------------------


PRICES = {
    "big": {"price_in_per_mtok": 10.0, "price_out_per_mtok": 30.0},
    "small": {"price_in_per_mtok": 0.1, "price_out_per_mtok": 0.3},
}


def test_routing_picks_cheaper_of_equivalent_models() -> None:
    records = corpus("big", 1.0) + corpus("small", 1.0)
    report = build_report(records, prices=PRICES, resamples=FAST)
    assert [r.tier for r in report.routes] == [*TIERS, OVERALL]
    assert {r.chosen for r in report.routes} == {"small"}
    assert report.cost_basis == "cost per run"


def test_routing_keeps_the_better_model_when_not_equivalent() -> None:
    records = corpus("big", 1.0) + corpus("small", 0.5)
    routes = build_report(records, prices=PRICES, resamples=FAST).routes
    assert all(r.best == "big" and r.chosen == "big" for r in routes)
    assert all(r.equivalent == ("big",) for r in routes)


def test_routing_falls_back_to_params_then_tokens() -> None:
    records = corpus("big", 1.0, tokens=50) + corpus("small", 1.0, tokens=500)
    by_params = build_report(records, params={"big": 70, "small": 8}, resamples=FAST)
    assert by_params.cost_basis == "params_b"
    assert by_params.routes[-1].chosen == "small"
    by_tokens = build_report(records, params={"small": 8}, resamples=FAST)
    assert by_tokens.cost_basis == "mean total tokens"
    assert by_tokens.routes[-1].chosen == "big"


def test_report_tables() -> None:
    records = corpus("big", 1.0) + corpus("small", 0.5)
    report = build_report(records, prices={"big": PRICES["big"]}, resamples=FAST)
    assert report.ladder["small"]["A"].passed == 10 and report.ladder["small"]["A"].n == 20
    assert report.failure_classes["small"]["F4"] == 60
    assert report.failure_labels["small"]["step_budget"] == 60
    assert report.terminations["small"] == {"final_answer": 60, "step_budget_exhausted": 60}
    assert report.usage["small"].cost_per_run is None
    assert report.usage["big"].cost_per_run == pytest.approx((100 * 10 + 50 * 30) / 1e6)
    md = report.markdown()
    for tier in TIERS:
        assert f"| {tier} |" in md
    assert "n/a" in md and "Routing" in md and "| F4 step budget exhausted |" in md


def test_markdown_shows_every_tier_even_when_empty() -> None:
    records = [run("m", t, True) for t in ("A1", "A2", "C3")]
    md = render_markdown(records, resamples=FAST)
    header = md.split("## Tier ladder")[1].split("\n| Model |")[1].split("\n")[0]
    assert all(f" {tier} |" in header for tier in TIERS)
    assert "1/1" in md


def test_ladder_text() -> None:
    records = corpus("oracle", 1.0, repeats=1) + corpus("coin", 0.6, repeats=1)
    text = render_ladder_text(records).splitlines()
    assert text[0].split() == ["model", *TIERS, OVERALL]
    assert text[2].startswith("oracle") and "5/5 100%" in text[2]
    assert "3/5 60%" in text[1] and "18/30 60%" in text[1]


def test_write_report_writes_markdown_and_png(tmp_path) -> None:
    records = corpus("big", 1.0) + corpus("small", 0.6)
    path = write_report(records, tmp_path / "out", prices=PRICES, resamples=FAST)
    assert path.read_text().startswith("# AgentFloor report")
    assert "![Tier ladder](ladder.png)" in path.read_text()
    png = (tmp_path / "out" / "ladder.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_build_report_needs_records() -> None:
    with pytest.raises(ValueError, match="no run records"):
        build_report([])
