"""Per-domain tables with BOTH Overall figures: the macro mean and the sample-weighted mean.

AgentWorld's README reports Overall as the macro mean of the domain scores, while its
``eval.py score`` prints the mean over all samples, which weights big domains more. The two
disagree (56.39 vs 55.36 for the 35B model) and can reorder models, so every report here shows
both, labelled.

Example:
    >>> r = domain_report([("a", {"total": 100.0}), ("b", {"total": 0.0}),
    ...                    ("b", {"total": 0.0}), ("b", {"total": 0.0})], ["total"])
    >>> r.macro["total"], r.weighted["total"]
    (50.0, 25.0)
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MACRO_LABEL", "WEIGHTED_LABEL", "DomainReport", "domain_report", "normalise"]

MACRO_LABEL = "Overall (macro mean of domains, as the AgentWorld README reports)"
WEIGHTED_LABEL = "Overall (sample-weighted, as AgentWorld's eval.py prints)"


def normalise(score: float) -> float:
    """A 1-5 judge score on the 0-100 scale: ``(x - 1) / 4 * 100``."""
    return (score - 1.0) / 4.0 * 100.0


def _mean(values: Iterable[float]) -> float:
    """The mean of the values that are not ``nan``, rounded once, as ``statistics.mean``
    (which ``eval.py`` uses) rounds it; ``nan`` when there are none."""
    kept = [v for v in values if not math.isnan(v)]
    return statistics.mean(kept) if kept else math.nan


@dataclass(frozen=True)
class DomainReport:
    """Means of each metric per domain, and the two Overall figures.

    ``nan`` values (a metric that does not apply to a sample) are left out of every mean.
    """

    metrics: tuple[str, ...]
    domains: dict[str, dict[str, float]]
    counts: dict[str, int]
    macro: dict[str, float]
    weighted: dict[str, float]
    failed: dict[str, int] = field(default_factory=dict)
    failure_reasons: dict[str, int] = field(default_factory=dict)
    """How many samples failed for each reason (no generation, an unreadable verdict...)."""
    unscored: int = 0
    """Scored samples without the first metric (a judge total of 0: no dimension above 0):
    counted in ``n``, but left out of that metric's means."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data; ``nan`` becomes None."""
        def clean(values: dict[str, float]) -> dict[str, float | None]:
            return {k: None if math.isnan(v) else round(v, 4) for k, v in values.items()}

        return {"metrics": list(self.metrics), "counts": self.counts, "failed": self.failed,
                "failure_reasons": self.failure_reasons, "unscored": self.unscored,
                "domains": {d: clean(v) for d, v in self.domains.items()},
                "overall_macro": clean(self.macro), "overall_weighted": clean(self.weighted)}

    def markdown(self, digits: int = 2) -> str:
        """A table: one row per domain, then the two labelled Overall rows."""
        def cells(values: dict[str, float]) -> str:
            return " | ".join("n/a" if math.isnan(values[m]) else f"{values[m]:.{digits}f}"
                              for m in self.metrics)

        lines = [f"| Domain | n | failed | {' | '.join(self.metrics)} |",
                 "|" + "---|" * (len(self.metrics) + 3)]
        for domain, values in self.domains.items():
            lines.append(f"| {domain} | {self.counts[domain]} | {self.failed.get(domain, 0)} | "
                         f"{cells(values)} |")
        total, failed = sum(self.counts.values()), sum(self.failed.values())
        lines.append(f"| **{MACRO_LABEL}** | {total} | {failed} | {cells(self.macro)} |")
        lines.append(f"| **{WEIGHTED_LABEL}** | {total} | {failed} | {cells(self.weighted)} |")
        if self.failure_reasons:
            lines.append("\nFailed samples (excluded from every mean): " + "; ".join(
                f"{reason}: {count}" for reason, count in self.failure_reasons.items()))
        if self.unscored:
            first = self.metrics[0]
            lines.append(f"\nScored with no {first} above 0 (counted in n, left out of the {first} "
                         f"means): {self.unscored}")
        return "\n".join(lines)


def domain_report(rows: Sequence[tuple[str, dict[str, float]]], metrics: Sequence[str],
                  failed: Sequence[tuple[str, str]] = (),
                  scale: Callable[[float], float] | None = None) -> DomainReport:
    """Aggregate per-sample metrics.

    Args:
        rows: ``(domain, {metric: value})`` per scored sample.
        metrics: The metrics to report, in column order.
        failed: ``(domain, reason)`` per failed sample (excluded from every mean, but counted).
        scale: Applied to each domain's and the sample-weighted mean (as ``eval.py`` normalises
            the mean, not each sample), before the macro mean of the domains.
    """
    def mean(values: Iterable[float]) -> float:
        value = _mean(values)
        return value if scale is None or math.isnan(value) else scale(value)

    by_domain: dict[str, list[dict[str, float]]] = {domain: [] for domain, _ in failed}
    for domain, values in rows:
        by_domain.setdefault(domain, []).append(values)
    domains = {d: {m: mean(v.get(m, math.nan) for v in samples) for m in metrics}
               for d, samples in sorted(by_domain.items())}
    macro = {m: _mean(values[m] for values in domains.values()) for m in metrics}  # nan skipped
    weighted = {m: mean(v.get(m, math.nan) for _, v in rows) for m in metrics}
    counts = {d: len(samples) for d, samples in sorted(by_domain.items())}
    unscored = sum(math.isnan(v.get(metrics[0], math.nan)) for _, v in rows)
    return DomainReport(tuple(metrics), domains, counts, macro, weighted,
                        dict(Counter(domain for domain, _ in failed)),
                        dict(Counter(reason for _, reason in failed).most_common()), unscored)
