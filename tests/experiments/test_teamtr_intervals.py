"""The TeamTR evidence's intervals cover what they say at its seed counts: a Student t interval
for the paired differences, the expanded percentile bootstrap (Hesterberg 2015) for the slopes,
and the committed results recomputed by ``--replot`` with only the interval limits changed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from trainers.experiments import teamtr_evidence

DOCS = Path(__file__).resolve().parents[2] / "docs"
DIFFS = [0.043, 0.080, 0.058, 0.084, 0.114, 0.303, 0.207, 0.048]
"""The per-seed differences of equal updates at n = 8 after two stages (committed runs)."""


def test_t_interval_is_students_for_the_mean_of_the_seeds() -> None:
    fit = teamtr_evidence.t_interval(DIFFS)
    sem = np.std(DIFFS, ddof=1) / math.sqrt(len(DIFFS))
    low, high = stats.t.interval(0.95, len(DIFFS) - 1, loc=np.mean(DIFFS), scale=sem)
    assert [fit["value"], fit["low"], fit["high"]] == pytest.approx([np.mean(DIFFS), low, high])
    assert teamtr_evidence.t_interval([0.2]) == {"value": 0.2, "low": None, "high": None}
    assert teamtr_evidence.t_interval([0.2] * 3) == pytest.approx(
        {"value": 0.2, "low": 0.2, "high": 0.2})


@pytest.mark.parametrize("seeds", [2, 8, 16])
def test_expanded_tail_is_hesterbergs(seeds: int) -> None:
    z = math.sqrt(seeds / (seeds - 1)) * stats.t.ppf(0.975, seeds - 1)
    assert teamtr_evidence.expanded_tail(seeds) == pytest.approx(stats.norm.sf(z), rel=1e-9)


def test_bootstrap_limits_are_the_expanded_percentiles_of_its_draws() -> None:
    per_x = {2: DIFFS, 4: [d + 0.1 for d in DIFFS[::-1]]}
    ratio = lambda means: means[4] / means[2]  # noqa: E731
    fit = teamtr_evidence.bootstrap(per_x, ratio, np.random.default_rng(5), draws=400)
    rng = np.random.default_rng(5)
    draws = [ratio(teamtr_evidence._resampled_means(per_x, rng, False)) for _ in range(400)]
    tail = 100 * stats.norm.sf(math.sqrt(8 / 7) * stats.t.ppf(0.975, 7))
    assert [fit["low"], fit["high"]] == pytest.approx(np.percentile(draws, [tail, 100 - tail]))
    assert teamtr_evidence.bootstrap({2: [1.0], 4: [2.0, 3.0]}, ratio,
                                     np.random.default_rng(0))["low"] is None


def test_bootstrap_interval_of_a_mean_of_8_seeds_covers_95_percent() -> None:
    # the percentile interval covered 0.888 of these 500 normal samples of 8, this one 0.946
    rng = np.random.default_rng(2024)
    covered = 0
    for _ in range(500):
        fit = teamtr_evidence.bootstrap({0: list(rng.normal(size=8))}, lambda m: m[0], rng,
                                        draws=400)
        covered += fit["low"] <= 0.0 <= fit["high"]
    assert 0.92 <= covered / 500 <= 0.975


def synthetic_results(seeds: int) -> list[dict]:
    """TeamTR first stages at n = 2 and 8 and the paired arms of equal updates at n = 2."""
    def shift(n: int, seed: int) -> dict:
        rows = [{"position": i, "true": 0.1, "stale": 0.1 - 0.01 * i * seed, "kl": 0.04,
                 "step_fraction": 1.0} for i in range(n)]
        return {"method": "teamtr", "n": n, "seed": seed, "shift_only": True,
                "warm_kl": 1e-4, "first_stage": rows}

    def trained(method: str, seed: int, reward: float) -> dict:
        return {"method": method, "n": 2, "seed": seed, "shift_only": False,
                "curve": [(0, 0.5), (256, reward)], "warm_kl": 1e-4, "accepted": 2.0,
                "updates": 2, "accepted_kl_q99": 0.1, "step_fractions": [1.0, 1.0],
                "stages": 1, "episodes": 256, "first_stage": []}

    runs = [shift(n, seed) for n in (2, 8) for seed in range(1, seeds + 1)]
    runs += [trained("teamtr_nx_budget", seed, 0.6 + d) for seed, d in enumerate(DIFFS, 1)]
    return runs + [trained("kl_no_refresh", seed, 0.6) for seed in range(1, seeds + 1)]


def test_summary_pairs_differences_with_a_t_interval() -> None:
    summary = teamtr_evidence.summarize(synthetic_results(len(DIFFS)))
    fit = summary["training"]["paired"]["equal_updates"]["by_n"][2][1]
    sem = np.std(DIFFS, ddof=1) / math.sqrt(len(DIFFS))
    low, high = stats.t.interval(0.95, len(DIFFS) - 1, loc=np.mean(DIFFS), scale=sem)
    assert [fit["value"], fit["low"], fit["high"]] == pytest.approx([np.mean(DIFFS), low, high])
    report = teamtr_evidence.report_text(summary)
    assert f"+{np.mean(DIFFS):.3f} [+{low:.3f}, +{high:.3f}]" in report
    assert "Student t interval" in report and "expanded percentile bootstrap" in report


@pytest.mark.parametrize("name", ["teamtr_evidence_results.json",
                                  "teamtr_evidence_population_std_results.json"])
def test_replot_recomputes_the_committed_summary_from_its_runs(name: str, tmp_path) -> None:
    committed = json.loads((DOCS / name).read_text())
    assert teamtr_evidence.main(["--replot", str(DOCS / name), "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "results.json").read_text())
    assert again["runs"] == committed["runs"]  # nothing trained, nothing lost
    assert again["summary"] == committed["summary"]
    shift = committed["summary"]["shift"]
    # the point estimates the percentile bootstrap reported, which the new intervals hold
    values = {"absolute": 1.16, "per_sqrt_kl": 1.27, "per_gain": 2.06}
    if "population_std" in name:
        values = {"absolute": 1.17, "per_sqrt_kl": 1.27, "per_gain": 2.05}
    for unit, value in values.items():
        fit = shift["slope_n"][unit]
        assert round(fit["value"], 2) == value and fit["low"] < fit["value"] < fit["high"]
        assert fit["high"] < shift["bound_slope_n"]  # the bound's 2.40 stays outside
