"""The TeamTR evidence's stale bias against position: every position's bias comes from the same
runs, so the bootstrap resamples the runs once per draw, the same runs at every position."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.experiments import teamtr_evidence


def linear_run(seed: int, scale: float, n: int = 8) -> dict:
    """A TeamTR first stage whose update after k others has stale bias ``scale`` · k."""
    rows = [{"position": k, "true": 0.1, "stale": 0.1 - scale * k, "kl": 0.04,
             "step_fraction": 1.0} for k in range(n)]
    return {"method": "teamtr", "n": n, "seed": seed, "shift_only": True, "first_stage": rows}


def test_position_slope_of_runs_each_exactly_linear_has_no_width() -> None:
    # every run's bias is exactly linear in position, only its size varies between runs: every
    # resampling of whole runs has slope 1; resampling each position's runs apart does not
    runs = [linear_run(seed, scale) for seed, scale in enumerate((0.001, 0.004, 0.01, 0.02))]
    shift = teamtr_evidence.summarize_shift(runs, np.random.default_rng(0))
    for fit in shift["slope_position"].values():
        assert fit["value"] == pytest.approx(1.0)
        assert fit["low"] == pytest.approx(1.0) and fit["high"] == pytest.approx(1.0)


def test_paired_bootstrap_resamples_the_same_runs_at_every_x() -> None:
    per_x = {1: [1.0, 2.0, 3.0], 2: [10.0, 20.0, 30.0]}
    fit = teamtr_evidence.bootstrap(per_x, lambda m: m[2] / m[1], np.random.default_rng(0),
                                    paired=True)
    assert [fit["value"], fit["low"], fit["high"]] == pytest.approx([10.0] * 3)
    independent = teamtr_evidence.bootstrap(per_x, lambda m: m[2] / m[1],
                                            np.random.default_rng(0))
    assert independent["high"] - independent["low"] > 1.0
    with pytest.raises(ValueError, match="same runs"):
        teamtr_evidence.bootstrap({1: [1.0, 2.0], 2: [1.0]}, lambda m: m[1],
                                  np.random.default_rng(0), paired=True)
