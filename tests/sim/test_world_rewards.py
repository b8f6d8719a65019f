"""The rule verifier reads numbers in every common notation, and the rubric judge's score is
the last one it gives, as the release's judge parser takes the last block."""

from __future__ import annotations

import pytest

from agentworld_envs.protocol.chat import Completion
from agentworld_envs.world.rewards import answer_matches, read_judge


@pytest.mark.parametrize(("answer", "expected", "result"), [
    ("about .5 of them", "0.5", True),
    ("0.5", ".5", True),
    ("5", ".5", False),          # ".5" is a half, not five
    ("1e3 units", "1000", True),
    ("1.2E+3", "1,200", True),
    ("1", "1e3", False),         # "1e3" is a thousand, not one
    ("\u22125 degrees", "-5", True),
    ("v2.0.1", "1", True),       # a version's parts stay apart
    ("v2.0.1", "0.1", False),
])
def test_numbers_are_read_in_every_notation(answer: str, expected: str, result: bool) -> None:
    assert answer_matches(answer, expected, "number") is result


@pytest.mark.parametrize(("text", "score"), [
    ('The scale: {"score": 5} is perfect. My grade: {"score": 2, "reason": "r"}', 0.25),
    ('<final_evaluation>```json\n{"score": 5}\n```\nrevised:\n```json\n{"score": 3}\n```'
     '</final_evaluation>', 0.5),
    ('<final_evaluation>{"score": 5}, no: {"score": 1}</final_evaluation>', 0.0),
    ('"score": 5 was my first thought; {"score": 4, "reason": "cut', 0.75),
])
def test_the_judges_last_score_is_its_grade(text: str, score: float) -> None:
    assert read_judge(Completion(text=text)) == (score, "")
