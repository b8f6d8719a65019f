"""The arithmetic chain's verifier reads the answer's first number whole: 17.5 is not 17."""

from __future__ import annotations

import pytest

from team_envs.text.arithmetic import ArithmeticChainTask
from team_envs.text.base import Problem


def _score(answer: str, value: int) -> float:
    task = ArithmeticChainTask(n_agents=2)
    return task.check(Problem("", ("", ""), value), answer)[0]


@pytest.mark.parametrize(("answer", "value"), [
    ("17.5", 17), ("17.25 exactly", 17), ("17/2", 17), ("1,7", 17), ("17,5", 17),
    ("−17", 17), ("1.7e1", 1),
])
def test_a_number_that_is_not_the_value_is_wrong(answer: str, value: int) -> None:
    assert _score(answer, value) == 0.0


@pytest.mark.parametrize(("answer", "value"), [
    ("17", 17), ("17.0", 17), ("17.", 17), ("The value is 17.", 17), ("0017", 17),
    ("-17", -17), ("−17", -17), ("1,234", 1234), ("12, 15", 12), ("-0", 0),
])
def test_the_value_in_any_equivalent_form_is_right(answer: str, value: int) -> None:
    assert _score(answer, value) == 1.0
