"""Pass-rate intervals count only real outcomes: a NaN, a partial score, text or None is refused
with a one-line error instead of being counted as a pass (``np.asarray(..., dtype=bool)`` made
``[nan, 0.0]`` one pass in two and ``["False"]`` a pass), and a count outside 0 to n is refused
instead of giving a math domain error or an interval above 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from floor_tasks.harness.stats import diff_ci, equivalence_test, pass_rate_ci, wilson_interval


@pytest.mark.parametrize(("outcomes", "shown"), [
    ([math.nan, 0.0], "nan at position 0"),
    ([True, 0.3, False], "0.3 at position 1"),
    (["False", "False"], "'False' at position 0"),
    ([True, None], "None at position 1"),
    (np.array([0, 2, 1]), "2 at position 1"),
])
def test_an_outcome_that_is_not_a_boolean_is_refused(outcomes: list, shown: str) -> None:
    with pytest.raises(ValueError, match=f"outcomes must be booleans .*got {shown}"):
        pass_rate_ci(outcomes)
    with pytest.raises(ValueError, match="outcomes must be booleans"):
        diff_ci([True, False], outcomes)
    with pytest.raises(ValueError, match="outcomes must be booleans"):
        equivalence_test(outcomes, [True, False])
    # booleans, and scores of exactly 0 or 1, still count alike
    assert pass_rate_ci([1, 0, 1.0, True]) == pass_rate_ci([True, False, True, True])
    assert pass_rate_ci(np.array([0.0, 1.0])).passed == 1
    assert pass_rate_ci([]).n == 0


@pytest.mark.parametrize(("passed", "n"), [(6, 5), (-1, 5), (3, -2), (1, 0)])
def test_a_count_outside_zero_to_n_is_refused(passed: int, n: int) -> None:
    with pytest.raises(ValueError, match=f"passed must lie in 0 to n, got {passed} passed of {n}"):
        wilson_interval(passed, n)
