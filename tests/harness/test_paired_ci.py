"""The paired Newcombe interval uses Newcombe's corrected phi (a positive ``ad - bc`` less
``n / 2``, not below 0), as his paired-data method 10 does: two models that agree on a couple
of cases are not "equivalent" on a zero-width interval."""

from __future__ import annotations

import pytest

from floor_tasks.harness.stats import diff_ci, equivalence_test


def table(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    """Paired outcomes with the given 2x2 counts."""
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return a, b


def test_a_correction_to_zero_gives_the_unpaired_interval() -> None:
    # Fagerland et al. (2014)'s table (1, 1, 7, 12): phi 0.0795, Newcombe's corrected phi 0
    # (ad - bc = 5 < n/2 = 10.5), as R's ratesci reports them.
    a, b = table(1, 1, 7, 12)
    paired, unpaired = diff_ci(a, b, paired=True), diff_ci(a, b)
    assert (paired.low, paired.high) == pytest.approx((unpaired.low, unpaired.high))


@pytest.mark.parametrize("outcomes", [[True, False], [True, False] * 3])
def test_a_few_concordant_cases_are_not_equivalent(outcomes: list[bool]) -> None:
    ci = diff_ci(outcomes, outcomes, paired=True)
    assert ci.low < -0.2 and ci.high > 0.2  # the uncorrected phi of 1 gave [0, 0]
    assert not equivalence_test(outcomes, outcomes, paired=True).equivalent


def test_many_concordant_cases_still_narrow_the_interval() -> None:
    outcomes = [True, False] * 20
    paired, unpaired = diff_ci(outcomes, outcomes, paired=True), diff_ci(outcomes, outcomes)
    assert unpaired.low < paired.low < 0 < paired.high < unpaired.high
    assert equivalence_test(outcomes, outcomes, paired=True).equivalent
