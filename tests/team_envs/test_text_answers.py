"""Reading the answerer's answer and the router's NEXT line as LLMs write them: markdown bold
on both sides of the marker, and a reasoning model's ``<think>`` block."""

from __future__ import annotations

import pytest

from team_envs.text import arithmetic, base


@pytest.mark.parametrize("message", ["**ANSWER**: **42**", "**ANSWER:** **42**",
                                     "**ANSWER**: 42", "ANSWER: **42**"])
def test_bold_on_a_marker_that_closes_its_own_bold_is_left_out_of_the_answer(message) -> None:
    assert base.final_answer(message) == "42"


@pytest.mark.parametrize(("message", "answer"), [
    ("<think>The format is ANSWER: <integer>. Is it 5? No.</think>\nThe value is 6.",
     "The value is 6."),
    ("<think>I will write ANSWER: 5\nwait, 6</think>6", "6"),
    ("Let me think. ANSWER: 5 maybe</think>\n\n**ANSWER:** 6", "6"),  # <think> in the prompt
])
def test_a_marker_in_the_thinking_is_not_the_answer(message, answer) -> None:
    assert base.final_answer(message) == answer


def test_the_arithmetic_verifier_scores_the_answer_after_the_thinking() -> None:
    env = arithmetic.env(n_agents=2, split=False)
    env.reset(seed=0)
    value = env.unwrapped.episode.problem.answer
    env.step("I computed it.")
    env.step(f"<think>Steps first: ANSWER: {value + 1}? No.</think>\nThe value is {value}.")
    assert env.rewards["agent_1"] == 1.0


@pytest.mark.parametrize("line", ["**NEXT:** critic", "**NEXT**: critic", "**NEXT: critic**",
                                  "NEXT: **critic**", "NEXT: critic"])
def test_a_router_line_in_markdown_bold_hands_over(line) -> None:
    env = arithmetic.env(n_agents=4, handoff="router")
    env.reset(seed=0)
    env.step(f"Plan: apply the steps in order.\n{line}")
    assert env.agent_selection == "agent_2"  # the critic, not the next agent in order


def test_a_router_line_in_the_thinking_does_not_hand_over() -> None:
    env = arithmetic.env(n_agents=4, handoff="router")
    env.reset(seed=0)
    env.step("<think>\nNEXT: critic\n</think>\nPlan: apply the steps in order.")
    assert env.agent_selection == "agent_1"
