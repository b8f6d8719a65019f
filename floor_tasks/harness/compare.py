"""Compare two run corpora and list the regressions of the new one.

A regression is a tier or task whose pass rate, over the cases both corpora ran, fell by more
than a threshold, or a case (task, variant, repeat) that passed in BASE and fails in NEW.
Cases are matched on (task_id, variant, repeat) alone when each corpus holds one model (the
same agent before and after a change, possibly under a new slug); when a corpus holds several
models, everything is compared model by model.

The comparison fails when nothing was compared, and when a BASE case has no run in NEW (a model
only in BASE included) unless missing cases are allowed: a gate must not pass on runs it never
saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.report import CaseKey, by_model, case_key
from floor_tasks.task import TIERS

__all__ = ["Regression", "CompareResult", "compare_corpora"]

_EPS = 1e-9


@dataclass(frozen=True)
class Regression:
    """One way NEW is worse than BASE."""

    kind: Literal["tier", "task", "case"]
    key: str
    """The tier, the task id, or ``task/variant/repeat``."""
    detail: str
    model: str | None = None
    """The model compared, when the corpora are compared model by model."""

    def __str__(self) -> str:
        where = f" [{self.model}]" if self.model else ""
        return f"{self.kind} {self.key}{where}: {self.detail}"


@dataclass
class CompareResult:
    """The regressions of NEW against BASE, plus notes on what could not be compared."""

    threshold: float
    cases_compared: int
    regressions: list[Regression] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cases_missing: int = 0
    """BASE cases with no run in NEW."""
    allow_missing: bool = False
    """Whether missing cases pass."""

    @property
    def problems(self) -> list[str]:
        """Why the comparison fails: regressions, nothing compared, missing cases."""
        found = [f"{len(self.regressions)} regression(s)"] if self.regressions else []
        if not self.cases_compared:
            found.append("no case compared")
        if self.cases_missing and not self.allow_missing:
            found.append(f"{self.cases_missing} BASE case(s) missing from NEW "
                         "(pass --allow-missing to accept)")
        return found

    @property
    def ok(self) -> bool:
        """True when cases were compared, none regressed and none is missing (unless
        allowed)."""
        return not self.problems

    def render(self) -> str:
        """Render as console text, regressions first."""
        scope = f"{self.cases_compared} cases compared, threshold {100 * self.threshold:g} pp"
        verdict = (f"OK: no regressions ({scope})" if self.ok
                   else f"FAIL: {'; '.join(self.problems)} ({scope})")
        lines = [verdict, *(f"  {r}" for r in self.regressions)]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _ladder_order(records: Sequence[RunRecord]) -> Callable[[str], tuple[int, str]]:
    """Sort key for tiers and task ids: ladder order, then name."""
    tier_of = {r.task_id: r.tier for r in records}
    rank = {tier: i for i, tier in enumerate(TIERS)}
    return lambda key: (rank.get(tier_of.get(key, key), len(rank)), key)


def _rates(records: Sequence[RunRecord], field_name: str) -> dict[str, tuple[int, int]]:
    counts: dict[str, tuple[int, int]] = {}
    for record in records:
        key = getattr(record, field_name)
        passed, n = counts.get(key, (0, 0))
        counts[key] = passed + record.passed, n + 1
    return counts


def _rate_regressions(
    kind: Literal["tier", "task"],
    base: Sequence[RunRecord],
    new: Sequence[RunRecord],
    threshold: float,
    model: str | None,
) -> list[Regression]:
    field_name = "tier" if kind == "tier" else "task_id"
    before, after = _rates(base, field_name), _rates(new, field_name)
    found = []
    for key in sorted(before.keys() & after.keys(), key=_ladder_order(base)):
        (p0, n0), (p1, n1) = before[key], after[key]
        drop = p0 / n0 - p1 / n1
        if drop > threshold + _EPS:
            detail = (f"pass rate {p0}/{n0} {p0 / n0:.0%} -> {p1}/{n1} {p1 / n1:.0%} "
                      f"(-{100 * drop:.0f} pp)")
            found.append(Regression(kind, key, detail, model))
    return found


def _cases(records: Sequence[RunRecord]) -> dict[CaseKey, list[RunRecord]]:
    cases: dict[CaseKey, list[RunRecord]] = {}
    for record in records:
        cases.setdefault(case_key(record), []).append(record)
    return cases


def _case_regressions(
    before: dict[CaseKey, list[RunRecord]], after: dict[CaseKey, list[RunRecord]],
    model: str | None, notes: list[str]
) -> tuple[list[Regression], int, int]:
    """The flipped cases of BASE's (``before``) and NEW's (``after``) cases, the number of cases
    compared and the number missing from NEW."""
    missing = len(before.keys() - after.keys())
    if missing:
        where = f" for {model}" if model else ""
        notes.append(f"{missing} BASE case(s){where} have no run in NEW")
    task_order = _ladder_order([r for runs in before.values() for r in runs])
    found = []
    for key in sorted(before.keys() & after.keys(), key=lambda k: (task_order(k[0]), k[1:])):
        failed = [r for r in after[key] if not r.passed]
        if all(r.passed for r in before[key]) and failed:
            why = failed[0].verdict.failure_class or failed[0].trajectory.termination
            detail = f"passed in BASE, fails in NEW ({why})"
            found.append(Regression("case", "/".join(map(str, key)), detail, model))
    return found, len(before.keys() & after.keys()), missing


def _on_shared_cases(
    before: dict[CaseKey, list[RunRecord]], after: dict[CaseKey, list[RunRecord]],
    model: str | None, notes: list[str]
) -> tuple[list[RunRecord], list[RunRecord]]:
    """The records of the cases both corpora ran, so that pass rates compare like with like
    (NEW's extra variants or repeats, and BASE's cases NEW lacks, are left out of them)."""
    shared = before.keys() & after.keys()
    if extra := len(after.keys() - shared):
        where = f" for {model}" if model else ""
        notes.append(f"{extra} NEW case(s){where} have no run in BASE: left out of the pass "
                     "rates")
    return ([r for key in shared for r in before[key]],
            [r for key in shared for r in after[key]])


def _groups(
    base: Sequence[RunRecord], new: Sequence[RunRecord], notes: list[str]
) -> list[tuple[str | None, Sequence[RunRecord], Sequence[RunRecord]]]:
    """Pair the records to compare: whole corpora for one model each, else model by model (a
    model only in BASE is paired with no runs)."""
    base_models, new_models = by_model(base), by_model(new)
    if len(base_models) <= 1 and len(new_models) <= 1:
        if base_models.keys() != new_models.keys() and base_models and new_models:
            notes.append(f"comparing {next(iter(base_models))} (BASE) with "
                         f"{next(iter(new_models))} (NEW)")
        return [(None, base, new)]
    for side, only in (("BASE", base_models.keys() - new_models.keys()),
                       ("NEW", new_models.keys() - base_models.keys())):
        if only:
            notes.append(f"models only in {side}, not compared: {', '.join(sorted(only))}")
    return [(m, base_models[m], new_models.get(m, [])) for m in base_models]


def compare_corpora(
    base_records: Sequence[RunRecord], new_records: Sequence[RunRecord], threshold: float = 0.10,
    *, allow_missing: bool = False,
) -> CompareResult:
    """Find the regressions of ``new_records`` against ``base_records``.

    Args:
        base_records: the reference corpus.
        new_records: the corpus under test.
        threshold: the largest tolerated drop of a tier's or task's pass rate.
        allow_missing: pass although BASE cases have no run in NEW.

    Returns:
        The regressions (tiers, then tasks, then flipped cases), the counts of cases compared
        and missing, and notes on unmatched runs.
    """
    notes: list[str] = []
    regressions: list[Regression] = []
    compared = missing = 0
    for model, base, new in _groups(base_records, new_records, notes):
        before, after = _cases(base), _cases(new)
        both = _on_shared_cases(before, after, model, notes)
        regressions += _rate_regressions("tier", *both, threshold, model)
        regressions += _rate_regressions("task", *both, threshold, model)
        flipped, n_cases, n_missing = _case_regressions(before, after, model, notes)
        regressions += flipped
        compared += n_cases
        missing += n_missing
    order = {"tier": 0, "task": 1, "case": 2}
    regressions.sort(key=lambda r: order[r.kind])
    return CompareResult(threshold, compared, regressions, notes, missing, allow_missing)
