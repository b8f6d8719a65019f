"""Countdown reads typeset operators (× ÷ −) as the * / - they stand for."""

from __future__ import annotations

import pytest

from team_envs.text.base import Problem
from team_envs.text.countdown import CountdownTask


def _score(answer: str) -> float:
    problem = Problem("", ("", ""), 24, {"numbers": [2, 4, 8, 10]})
    return CountdownTask(n_agents=2).check(problem, answer)[0]


@pytest.mark.parametrize(("answer", "score"), [
    ("(10 − 4) × 8 ÷ 2", 1.0),
    ("8 × (10 − 4) ÷ 2 = 24", 1.0),
    ("(10 − 4) × 8 ÷ 4", 0.0),  # 4 used twice
    ("(10 − 2) × 8 ÷ 4", 0.0),  # 16
    ("(10 − 4) × 8 ÷ (2 − 2)", 0.0),  # divides by zero
])
def test_typeset_answers_are_scored_like_ascii_ones(answer: str, score: float) -> None:
    ascii_answer = answer.replace("×", "*").replace("÷", "/").replace("−", "-")
    assert _score(answer) == _score(ascii_answer) == score


@pytest.mark.parametrize("answer", ["(10 - 4) * 8 / 2.", "(10 - 4) * 8 / 2 .\n",
                                    "(10 - 4) * 8 / 2. = 24"])
def test_a_closing_full_stop_is_not_part_of_the_expression(answer: str) -> None:
    assert _score(answer) == 1.0
