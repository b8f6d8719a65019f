"""Bootstrap confidence intervals for pass rates and an equivalence test between two of them.

Outcomes are booleans (one per run). Resampling n Bernoulli outcomes with replacement gives a
mean distributed exactly as ``Binomial(n, p̂) / n``; resampling n outcome *pairs* gives counts
distributed as a multinomial over the four pass/fail combinations. Both are drawn directly,
which equals the index-resampling bootstrap in distribution and costs O(resamples) for any n.
Intervals are percentile intervals from a ``numpy.random.Generator`` with an explicit seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "RESAMPLES",
    "SEED",
    "MIN_RUNS",
    "RateCI",
    "DiffCI",
    "Equivalence",
    "pass_rate_ci",
    "diff_ci",
    "equivalence_test",
]

RESAMPLES = 10_000
SEED = 42
MIN_RUNS = 5
"""Cells with fewer runs get the uninformative interval ([0, 1] for a rate, [-1, 1] for a
difference)."""


@dataclass(frozen=True)
class RateCI:
    """A pass rate with its bootstrap confidence interval."""

    passed: int
    n: int
    low: float
    high: float
    confidence: float

    @property
    def rate(self) -> float:
        """The observed pass rate; NaN when there are no runs."""
        return self.passed / self.n if self.n else math.nan

    def __str__(self) -> str:
        if not self.n:
            return "n/a"
        return f"{self.rate:.0%} [{self.low:.0%}, {self.high:.0%}] ({self.passed}/{self.n})"


@dataclass(frozen=True)
class DiffCI:
    """A difference of pass rates (``a - b``) with its bootstrap confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    paired: bool

    def __str__(self) -> str:
        return f"{100 * self.estimate:+.1f} pp [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"


@dataclass(frozen=True)
class Equivalence:
    """The outcome of a TOST-style equivalence test of two pass rates."""

    diff: DiffCI
    margin: float

    @property
    def equivalent(self) -> bool:
        """True when the whole confidence interval of the difference lies within ±margin."""
        return -self.margin <= self.diff.low and self.diff.high <= self.margin


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    tail = (1 - confidence) / 2
    low, high = np.quantile(samples, [tail, 1 - tail])
    return float(low), float(high)


def _as_bools(outcomes: Sequence[bool]) -> np.ndarray:
    return np.asarray(outcomes, dtype=bool).reshape(-1)


def pass_rate_ci(
    outcomes: Sequence[bool],
    *,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> RateCI:
    """Bootstrap a confidence interval of the pass rate of ``outcomes``.

    Args:
        outcomes: one boolean per run.
        confidence: the interval's coverage.
        resamples: the number of bootstrap resamples.
        seed: the seed of the ``numpy.random.Generator``.

    Returns:
        The pass rate and interval; [0, 1] when there are fewer than :data:`MIN_RUNS` runs.
    """
    data = _as_bools(outcomes)
    n, passed = data.size, int(data.sum())
    if n < MIN_RUNS:
        return RateCI(passed, n, 0.0, 1.0, confidence)
    samples = np.random.default_rng(seed).binomial(n, passed / n, size=resamples) / n
    return RateCI(passed, n, *_percentiles(samples, confidence), confidence)


def diff_ci(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    paired: bool = False,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> DiffCI:
    """Bootstrap a confidence interval of ``rate(a) - rate(b)``.

    Args:
        a: outcomes of the first arm.
        b: outcomes of the second arm.
        paired: resample (a[i], b[i]) pairs jointly (the same cases run by both arms);
            otherwise each arm is resampled independently.
        confidence: the interval's coverage.
        resamples: the number of bootstrap resamples.
        seed: the seed of the ``numpy.random.Generator``.

    Returns:
        The difference and interval; [-1, 1] when either arm has fewer than :data:`MIN_RUNS`
        runs.

    Raises:
        ValueError: when ``paired`` and the arms differ in length.
    """
    xa, xb = _as_bools(a), _as_bools(b)
    if paired and xa.size != xb.size:
        raise ValueError(f"paired outcomes need equal lengths, got {xa.size} and {xb.size}")
    estimate = float(xa.mean() - xb.mean()) if xa.size and xb.size else math.nan
    if min(xa.size, xb.size) < MIN_RUNS:
        return DiffCI(estimate, -1.0, 1.0, confidence, paired)
    rng = np.random.default_rng(seed)
    if paired:
        n = xa.size
        only_a, only_b = int((xa & ~xb).sum()), int((xb & ~xa).sum())
        probs = [only_a / n, only_b / n, 1 - (only_a + only_b) / n]
        counts = rng.multinomial(n, probs, size=resamples)
        samples = (counts[:, 0] - counts[:, 1]) / n
    else:
        samples = (
            rng.binomial(xa.size, xa.mean(), size=resamples) / xa.size
            - rng.binomial(xb.size, xb.mean(), size=resamples) / xb.size
        )
    return DiffCI(estimate, *_percentiles(samples, confidence), confidence, paired)


def equivalence_test(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    margin: float = 0.10,
    paired: bool = False,
    confidence: float = 0.90,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Equivalence:
    """Test whether two pass rates are equivalent (two one-sided tests, TOST).

    The rates are equivalent when the ``confidence`` (default 90%, i.e. two one-sided tests at
    5%) bootstrap interval of ``rate(a) - rate(b)`` lies within ``[-margin, +margin]``.

    Args:
        a: outcomes of the first arm.
        b: outcomes of the second arm.
        margin: the equivalence margin, as a difference of rates.
        paired: whether the outcomes are paired case by case (see :func:`diff_ci`).
        confidence: the coverage of the interval that must fit inside the margin.
        resamples: the number of bootstrap resamples.
        seed: the seed of the ``numpy.random.Generator``.
    """
    diff = diff_ci(a, b, paired=paired, confidence=confidence, resamples=resamples, seed=seed)
    return Equivalence(diff, margin)
