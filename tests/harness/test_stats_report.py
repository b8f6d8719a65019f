"""Score intervals and the corpus report (ladder, histograms, cost, routing, plot)."""

from __future__ import annotations

import pytest

from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.report import (
    OVERALL,
    build_report,
    render_ladder_text,
    render_markdown,
    write_report,
)
from floor_tasks.harness.stats import diff_ci, equivalence_test, pass_rate_ci
from floor_tasks.task import TIERS
from tests.helpers.records import synthetic_record

TIER_OF = {f"{tier}{i}": tier for tier in TIERS for i in range(1, 6)}  # A01.., A1.., .., E5


def run(model: str, task_id: str, passed: bool, repeat: int = 0, tokens: int = 100) -> RunRecord:
    """A synthetic run record; a failed one ran out of steps (F4)."""
    return synthetic_record(
        task_id, TIER_OF[task_id], passed, model, repeat,
        termination="final_answer" if passed else "step_budget_exhausted", turns=2,
        usage={"input_tokens": tokens, "output_tokens": tokens // 2,
               "total_tokens": tokens + tokens // 2},
        latency_s=0.5, wall_s=0.6,
        verdict={"passed": passed, "failure_class": None if passed else "F4",
                 "failure_labels": [] if passed else ["step_budget"], "checks": {}})


def corpus(model: str, pass_rate: float, repeats: int = 4, tokens: int = 100
           ) -> list[RunRecord]:
    """Every task × ``repeats``; in each tier the first ``pass_rate`` share of runs pass."""
    records = []
    for tier in TIERS:
        cases = [(t, r) for t in TIER_OF if TIER_OF[t] == tier for r in range(repeats)]
        n_pass = round(pass_rate * len(cases))
        records += [run(model, t, i < n_pass, r, tokens) for i, (t, r) in enumerate(cases)]
    return records


# --- stats ---------------------------------------------------------------------------------


def outcomes(passed: int, n: int) -> list[bool]:
    return [True] * passed + [False] * (n - passed)


@pytest.mark.parametrize("passed,n,low,high", [
    (5, 5, 0.5655, 1.0), (0, 5, 0.0, 0.4345), (3, 10, 0.1078, 0.6032), (7, 10, 0.3968, 0.8922),
    (1, 1, 0.2065, 1.0),
])
def test_rate_ci_is_the_wilson_interval(passed: int, n: int, low: float, high: float) -> None:
    ci = pass_rate_ci(outcomes(passed, n))
    assert (ci.passed, ci.n, ci.confidence) == (passed, n, 0.95)
    assert (ci.low, ci.high) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_rate_ci_does_not_collapse_at_the_ends() -> None:
    assert str(pass_rate_ci(outcomes(5, 5))) == "100% [57%, 100%] (5/5)"
    assert str(pass_rate_ci(outcomes(0, 5))) == "0% [0%, 43%] (0/5)"
    assert str(pass_rate_ci([])) == "n/a"
    assert (pass_rate_ci([]).low, pass_rate_ci([]).high) == (0.0, 1.0)


@pytest.mark.parametrize("passed,n", [(7, 10), (0, 8), (8, 8), (33, 50)])
def test_rate_ci_contains_estimate(passed: int, n: int) -> None:
    ci = pass_rate_ci(outcomes(passed, n))
    assert 0 <= ci.low <= ci.rate <= ci.high <= 1 and ci.low < ci.high


def test_rate_ci_shrinks_with_n_and_widens_with_confidence() -> None:
    cis = [pass_rate_ci(outcomes(7 * k, 10 * k)) for k in (1, 10, 100)]
    widths = [ci.high - ci.low for ci in cis]
    assert widths[0] > widths[1] > widths[2]
    assert pass_rate_ci(outcomes(7, 10), confidence=0.99).low < cis[0].low
    with pytest.raises(ValueError, match="confidence"):
        pass_rate_ci(outcomes(7, 10), confidence=1.0)


def test_diff_ci_is_newcombes_interval() -> None:
    # Newcombe (1998), Stat Med 17:873, example (a): 56/70 vs 48/80 -> [0.0524, 0.3339].
    ci = diff_ci(outcomes(56, 70), outcomes(48, 80))
    assert ci.estimate == pytest.approx(0.2)
    assert (ci.low, ci.high) == (pytest.approx(0.0524, abs=1e-4), pytest.approx(0.3339, abs=1e-4))


def test_diff_ci_paired_and_unpaired() -> None:
    a = outcomes(20, 40)
    unpaired = diff_ci(a, a)
    assert unpaired.estimate == 0.0 and unpaired.low == pytest.approx(-unpaired.high)
    same = diff_ci(a, a, paired=True)
    assert same.estimate == 0.0 and unpaired.low < same.low <= 0.0 <= same.high < unpaired.high
    better = diff_ci([True] * 40, a, paired=True)
    assert better.estimate == 0.5 and better.low < 0.5 < better.high
    perfect = diff_ci([True] * 5, [True] * 5, paired=True)  # no spread to correlate: unpaired
    assert (perfect.low, perfect.high) == (diff_ci([True] * 5, [True] * 5).low, -perfect.low)
    assert perfect.low < -0.4
    with pytest.raises(ValueError, match="equal lengths"):
        diff_ci(a, a[:-1], paired=True)
    assert (diff_ci([], a).low, diff_ci([], a).high) == (-1.0, 1.0)


def test_equivalence_test() -> None:
    a = outcomes(90, 100)
    assert equivalence_test(a, a, paired=True).equivalent
    assert equivalence_test([True] * 100, [True] * 100).equivalent
    assert not equivalence_test([True] * 100, outcomes(50, 100)).equivalent
    assert not equivalence_test([True] * 5, [True] * 5, paired=True).equivalent  # too few runs
    assert not equivalence_test(a, a, margin=0.0, paired=True).equivalent


# --- report ----------------------------------------------------------------------------------


PRICES = {
    "big": {"price_in_per_mtok": 10.0, "price_out_per_mtok": 30.0},
    "small": {"price_in_per_mtok": 0.1, "price_out_per_mtok": 0.3},
}


def test_routing_picks_cheaper_of_equivalent_models() -> None:
    records = corpus("big", 1.0, repeats=20) + corpus("small", 1.0, repeats=20)
    report = build_report(records, prices=PRICES)
    assert [r.tier for r in report.routes] == [*TIERS, OVERALL]
    assert {r.chosen for r in report.routes} == {"small"}
    assert report.cost_basis == "cost per run"


def test_routing_needs_enough_runs_to_call_models_equivalent() -> None:
    records = corpus("big", 1.0, repeats=1) + corpus("small", 1.0, repeats=1)  # 5/5 per tier
    routes = build_report(records, prices=PRICES).routes
    assert all(r.equivalent == (r.best,) for r in routes[:-1])  # ties go to the cheaper
    md = build_report(records, prices=PRICES).markdown()
    assert "100% [57%, 100%] (5/5)" in md and "95% Wilson score interval" in md
    assert "Newcombe score interval" in md and "bootstrap" not in md


def test_routing_keeps_the_better_model_when_not_equivalent() -> None:
    records = corpus("big", 1.0) + corpus("small", 0.5)
    routes = build_report(records, prices=PRICES).routes
    assert all(r.best == "big" and r.chosen == "big" for r in routes)
    assert all(r.equivalent == ("big",) for r in routes)


def test_routing_falls_back_to_params_then_tokens() -> None:
    records = corpus("big", 1.0, 20, tokens=50) + corpus("small", 1.0, 20, tokens=500)
    by_params = build_report(records, params={"big": 70, "small": 8})
    assert by_params.cost_basis == "params_b"
    assert by_params.routes[-1].chosen == "small"
    by_tokens = build_report(records, params={"small": 8})
    assert by_tokens.cost_basis == "mean total tokens"
    assert by_tokens.routes[-1].chosen == "big"


def test_report_tables() -> None:
    records = corpus("big", 1.0) + corpus("small", 0.5)
    report = build_report(records, prices={"big": PRICES["big"]})
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
    md = render_markdown(records)
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
    path = write_report(records, tmp_path / "out", prices=PRICES)
    assert path.read_text().startswith("# AgentFloor report")
    assert "![Tier ladder](ladder.png)" in path.read_text()
    png = (tmp_path / "out" / "ladder.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_build_report_needs_records() -> None:
    with pytest.raises(ValueError, match="no run records"):
        build_report([])
