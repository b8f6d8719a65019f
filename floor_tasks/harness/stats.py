"""Score confidence intervals for pass rates and an equivalence test between two of them.

A pass rate gets the Wilson score interval, which stays honest for small counts: 5/5 gives
[56.6%, 100%], not the [100%, 100%] of a bootstrap that collapses at 0% and 100%. A difference
of two rates gets Newcombe's hybrid score interval, built from the two rates' intervals
(Newcombe 1998, method 10 for independent arms; method 10 of the paired-data paper, with its
corrected phi correlation of the 2x2 table, for the same cases run by both arms). Both are
closed-form, so they need no resampling and no random draws.

Runs may come in clusters (a task's variants and repeats) whose outcomes are correlated: under
greedy decoding a task's repeats agree exactly. Counting every run as independent then makes the
interval too narrow for the rate over the population of tasks, so clustered runs get a
design-effect-adjusted Wilson interval, as survey proportions do (Korn & Graubard 1998): the
rate ``p`` over the ``n`` runs keeps its value, and Wilson's interval is taken over the effective
number of runs ``n_eff = n / deff``. The design effect ``deff`` is the cluster-robust variance of
``p`` (the ratio estimator's, from the clusters' pass counts ``y_c`` and run counts ``m_c``:
``C / (C - 1) * sum((y_c - p m_c)^2) / n^2`` over ``C`` clusters) over the binomial
``p (1 - p) / n``. ``n_eff`` is kept within ``[C, n]``: never more than the runs, never fewer than
the clusters. At ``p`` of 0 or 1, or with a single cluster, the design effect cannot be
estimated, and ``n_eff = C`` (each cluster one observation, as when its runs agree). With one run
per cluster ``n_eff = n``: the interval is Wilson's over the runs. Korn and Graubard's
degrees-of-freedom factor ``(z / t_{C-1})^2`` on ``n_eff`` is not applied: it cannot raise the
greedy cases, whose ``n_eff`` is already ``C`` (Wilson's own coverage over ``C`` independent
tasks), and only widens the others. The README's "The ladder's intervals in simulation" gives
the coverage, with the snippet that measures it.

The paired difference takes each arm's limits from its clustered interval and, for phi, the
cluster-robust correlation of the two rates (from the clusters' residual pass counts
``y_c - p m_c`` of both arms), with Newcombe's correction scaled to clusters: a positive
covariance sum is reduced by half a mean cluster squared, ``(n / C)^2 / 2`` (Newcombe's ``n / 2``
off ``ad - bc`` when every cluster is one run, so the interval is his there).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
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
    """A pass rate with its (design-effect-adjusted) Wilson score confidence interval."""

    passed: int
    n: int
    low: float
    high: float
    confidence: float
    clusters: int
    """How many clusters (tasks) the runs came from; ``n`` when each run is its own."""
    n_eff: float
    """The effective number of runs the interval is Wilson's over, from ``clusters`` to ``n``."""

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
    return _wilson(passed / n, n, z)


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's limits for a rate ``p`` over ``n`` (possibly fractional, > 0) trials."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
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


@dataclass(frozen=True)
class _Clustered:
    """One arm's outcomes summed by cluster: pass counts ``y``, run counts ``m``."""

    y: np.ndarray
    m: np.ndarray

    @classmethod
    def of(cls, data: np.ndarray, clusters: Sequence[Hashable] | None) -> _Clustered:
        """Sum ``data`` by cluster label; each run is its own cluster when ``clusters`` is None.

        Raises:
            ValueError: when ``clusters`` does not hold one label per outcome.
        """
        if clusters is None:
            return cls(data.astype(float), np.ones(data.size))
        labels = list(clusters)
        if len(labels) != data.size:
            raise ValueError(f"clusters must hold one label per outcome, got {len(labels)} "
                             f"labels for {data.size} outcomes")
        index: dict[Hashable, int] = {}
        ids = np.array([index.setdefault(label, len(index)) for label in labels], dtype=int)
        return cls(np.bincount(ids, weights=data, minlength=len(index)),
                   np.bincount(ids, minlength=len(index)).astype(float))

    @property
    def n(self) -> int:
        return int(self.m.sum())

    @property
    def rate(self) -> float:
        return float(self.y.sum() / self.m.sum())

    @property
    def residuals(self) -> np.ndarray:
        """Each cluster's passes less its runs' share at the pooled rate, ``y_c - p m_c``."""
        return self.y - self.rate * self.m

    def n_eff(self) -> float:
        """The runs over the design effect, within [clusters, runs]; the clusters at a rate of
        0 or 1 or with one cluster, where the design effect cannot be estimated."""
        n, c, p = self.n, self.y.size, self.rate
        if p in (0.0, 1.0) or c == 1:
            return c
        spread = float((self.residuals ** 2).sum())
        if not spread:
            return n
        variance = c / (c - 1) * spread / n ** 2
        return min(max(p * (1 - p) / variance, c), n)

    def interval(self, confidence: float) -> RateCI:
        z = _z(confidence)
        if not self.y.size:
            return RateCI(0, 0, 0.0, 1.0, confidence, 0, 0.0)
        n_eff = self.n_eff()
        return RateCI(int(self.y.sum()), self.n, *_wilson(self.rate, n_eff, z), confidence,
                      self.y.size, float(n_eff))


def pass_rate_ci(
    outcomes: Sequence[bool],
    *,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
) -> RateCI:
    """The pass rate of ``outcomes`` (one boolean per run) with its score interval.

    Args:
        outcomes: one boolean (or 0 or 1) per run.
        clusters: one label per run naming its cluster (e.g. its task): the interval is then
            Wilson's over the effective number of runs (see the module docstring). None: every
            run is independent, and the interval is Wilson's over the runs.
        confidence: the interval's coverage.

    Raises:
        ValueError: when an outcome is not a boolean (or 0 or 1), or ``clusters`` does not hold
            one label per outcome.
    """
    return _Clustered.of(_as_bools(outcomes), clusters).interval(confidence)


def _correlation(a: _Clustered, b: _Clustered) -> float:
    """The cluster-robust correlation of two arms' rates over the same clusters, its positive
    covariance sum less half a mean cluster squared (Newcombe's corrected phi when every cluster
    is one run); 0 when either arm does not vary."""
    ra, rb = a.residuals, b.residuals
    scale = float((ra ** 2).sum() * (rb ** 2).sum())
    if not scale:
        return 0.0
    covariance = float((ra * rb).sum())
    if covariance > 0:
        covariance = max(covariance - (a.n / a.y.size) ** 2 / 2, 0.0)
    return covariance / math.sqrt(scale)


def diff_ci(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    paired: bool = False,
    clusters_a: Sequence[Hashable] | None = None,
    clusters_b: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
) -> DiffCI:
    """Newcombe's score interval of ``rate(a) - rate(b)``, from the arms' clustered intervals.

    Args:
        a: outcomes of the first arm.
        b: outcomes of the second arm.
        paired: a[i] and b[i] are the same case run by both arms; the interval then accounts
            for their correlation (narrower when the arms agree case by case, or cluster by
            cluster).
        clusters_a: one cluster label per outcome of ``a`` (see :func:`pass_rate_ci`); None:
            every run is independent.
        clusters_b: the same for ``b``; when ``paired``, the cases' clusters are ``clusters_a``
            and ``clusters_b`` may only repeat them.
        confidence: the interval's coverage.

    Returns:
        The difference and interval; NaN estimate and [-1, 1] when either arm is empty.

    Raises:
        ValueError: when ``paired`` and the arms differ in length or in clusters, an outcome is
            not a boolean (or 0 or 1), or a clusters sequence does not hold one label per outcome.
    """
    xa, xb = _as_bools(a), _as_bools(b)
    if paired and xa.size != xb.size:
        raise ValueError(f"paired outcomes need equal lengths, got {xa.size} and {xb.size}")
    if paired and clusters_b is not None and (clusters_a is None
                                              or list(clusters_b) != list(clusters_a)):
        raise ValueError("paired outcomes share their cases' clusters: give clusters_a only")
    arm_a = _Clustered.of(xa, clusters_a)
    arm_b = _Clustered.of(xb, clusters_a if paired else clusters_b)
    ci_a, ci_b = arm_a.interval(confidence), arm_b.interval(confidence)
    if not (ci_a.n and ci_b.n):
        return DiffCI(math.nan, -1.0, 1.0, confidence, paired)
    (pa, la, ua), (pb, lb, ub) = (ci_a.rate, ci_a.low, ci_a.high), (ci_b.rate, ci_b.low, ci_b.high)
    phi = _correlation(arm_a, arm_b) if paired else 0.0
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
    clusters_a: Sequence[Hashable] | None = None,
    clusters_b: Sequence[Hashable] | None = None,
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
        clusters_a: the cluster of each outcome of ``a`` (see :func:`diff_ci`).
        clusters_b: the cluster of each outcome of ``b`` (see :func:`diff_ci`).
        confidence: the coverage of the interval that must fit inside the margin.
    """
    return Equivalence(diff_ci(a, b, paired=paired, clusters_a=clusters_a,
                               clusters_b=clusters_b, confidence=confidence), margin)
