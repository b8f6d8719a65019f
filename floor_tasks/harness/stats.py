"""Score confidence intervals for pass rates and an equivalence test between two of them.

A pass rate gets the Wilson score interval, which stays honest for small counts: 5/5 gives
[56.6%, 100%], not the [100%, 100%] of a bootstrap that collapses at 0% and 100%. A difference
of two rates gets Newcombe's hybrid score interval, built from the two Wilson intervals
(Newcombe 1998, method 10 for independent arms; method 10 of the paired-data paper, with its
corrected phi correlation of the 2x2 table, for the same cases run by both arms). Both are
closed-form, so they need no resampling and no random draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = [
    "METHOD",
    "RateCI",
    "DiffCI",
    "Equivalence",
    "wilson_interval",
    "pass_rate_ci",
    "diff_ci",
    "equivalence_test",
]

METHOD = "Wilson score"
"""The name of the pass-rate interval, for report text."""


@dataclass(frozen=True)
class RateCI:
    """A pass rate with its Wilson score confidence interval."""

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
    """A difference of pass rates (``a - b``) with its Newcombe score confidence interval."""

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


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(passed: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``n`` trials; (0, 1) when n = 0.

    Raises:
        ValueError: when ``passed`` is not in 0 to ``n`` (a negative ``n`` included).
    """
    z = _z(confidence)
    if not 0 <= passed <= n:
        raise ValueError(f"passed must lie in 0 to n, got {passed} passed of {n}")
    if not n:
        return 0.0, 1.0
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def _as_bools(outcomes: Sequence[bool]) -> np.ndarray:
    """The outcomes as booleans; anything but a boolean, 0 or 1 (NaN, a partial score, text,
    None) is refused rather than counted as a pass."""
    data = np.asarray(outcomes).reshape(-1)
    if data.dtype != bool:
        bad = (~np.isin(data, (0, 1)) if data.dtype.kind in "iuf"
               else np.array([v not in (0, 1) for v in data.tolist()], dtype=bool))
        if bad.any():
            first = int(np.argmax(bad))
            value = data[first:first + 1].tolist()[0]
            raise ValueError(f"outcomes must be booleans (or 0 and 1), got {value!r} at "
                             f"position {first}")
    return data.astype(bool)


def pass_rate_ci(outcomes: Sequence[bool], *, confidence: float = 0.95) -> RateCI:
    """The pass rate of ``outcomes`` (one boolean per run) with its Wilson score interval;
    anything but a boolean, 0 or 1 is a ValueError."""
    data = _as_bools(outcomes)
    n, passed = data.size, int(data.sum())
    return RateCI(passed, n, *wilson_interval(passed, n, confidence), confidence)


def _phi(xa: np.ndarray, xb: np.ndarray) -> float:
    """Newcombe's phi correlation of paired outcomes: a positive ``ad - bc`` is reduced by
    ``n / 2`` (not below 0), so that a few concordant cases cannot make the interval collapse;
    0 when a margin of the 2x2 table is empty."""
    both, only_a = int((xa & xb).sum()), int((xa & ~xb).sum())
    only_b, neither = int((~xa & xb).sum()), int((~xa & ~xb).sum())
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    association = both * neither - only_a * only_b
    if association > 0:
        association = max(association - xa.size / 2, 0.0)
    return association / math.sqrt(margins) if margins else 0.0


def diff_ci(
    a: Sequence[bool], b: Sequence[bool], *, paired: bool = False, confidence: float = 0.95
) -> DiffCI:
    """Newcombe's score interval of ``rate(a) - rate(b)``.

    Args:
        a: outcomes of the first arm.
        b: outcomes of the second arm.
        paired: a[i] and b[i] are the same case run by both arms; the interval then accounts
            for their correlation (narrower when the arms agree case by case).
        confidence: the interval's coverage.

    Returns:
        The difference and interval; NaN estimate and [-1, 1] when either arm is empty.

    Raises:
        ValueError: when ``paired`` and the arms differ in length, or an outcome is not a
            boolean (or 0 or 1).
    """
    xa, xb = _as_bools(a), _as_bools(b)
    if paired and xa.size != xb.size:
        raise ValueError(f"paired outcomes need equal lengths, got {xa.size} and {xb.size}")
    la, ua = wilson_interval(int(xa.sum()), xa.size, confidence)
    lb, ub = wilson_interval(int(xb.sum()), xb.size, confidence)
    if not (xa.size and xb.size):
        return DiffCI(math.nan, -1.0, 1.0, confidence, paired)
    pa, pb = float(xa.mean()), float(xb.mean())
    phi = _phi(xa, xb) if paired else 0.0
    below = math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    above = math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    estimate = pa - pb
    return DiffCI(estimate, max(-1.0, estimate - below), min(1.0, estimate + above), confidence,
                  paired)


def equivalence_test(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    margin: float = 0.10,
    paired: bool = False,
    confidence: float = 0.90,
) -> Equivalence:
    """Test whether two pass rates are equivalent (two one-sided tests, TOST).

    The rates are equivalent when the ``confidence`` (default 90%, i.e. two one-sided tests at
    5%) score interval of ``rate(a) - rate(b)`` (:func:`diff_ci`) lies within
    ``[-margin, +margin]``. Few runs give a wide interval, hence no equivalence.

    Args:
        a: outcomes of the first arm.
        b: outcomes of the second arm.
        margin: the equivalence margin, as a difference of rates.
        paired: whether the outcomes are paired case by case (see :func:`diff_ci`).
        confidence: the coverage of the interval that must fit inside the margin.
    """
    return Equivalence(diff_ci(a, b, paired=paired, confidence=confidence), margin)
