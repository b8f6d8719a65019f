"""Scenarios whose checks, controls or tools could never work are refused when they load,
with a message naming the field, instead of failing at the episode's end or at reset."""

from __future__ import annotations

import pydantic
import pytest

from agentworld_envs.world.scenario import Scenario

BASE = {"id": "s", "domain": "mcp", "instruction": "q", "candidate_actions": ["a"]}


def refusal(**fields) -> str:
    with pytest.raises(pydantic.ValidationError) as caught:
        Scenario(**{**BASE, **fields})
    return str(caught.value)


@pytest.mark.parametrize("kind", ["action_matches", "no_action_matches"])
def test_a_check_pattern_that_is_no_regular_expression_is_refused(kind: str) -> None:
    message = refusal(reward={"checks": [{"check": kind, "value": "rm (-rf"}]})
    assert f"check '{kind}'" in message and "not a regular expression" in message


@pytest.mark.parametrize(("check", "reference"), [
    ({"check": "observation_contains", "value": "!!!"}, None),  # passed on any observation
    ({"check": "answer_matches"}, "?!"),                        # passed by no answer
    ({"check": "answer_observed"}, "   "),
    ({"check": "answer_matches", "value": "..."}, "Ilsa Toren"),
])
def test_a_compared_text_without_a_letter_or_digit_is_refused(check, reference) -> None:
    message = refusal(reference_answer=reference, reward={"checks": [check]})
    assert check["check"] in message and "letter or digit" in message


def test_a_control_turn_before_the_first_is_refused() -> None:
    assert "controls.0.turns.0" in refusal(controls=[{"kind": "tool_error", "turns": [0]}])


@pytest.mark.parametrize(("tool", "field"), [
    ({"name": "t", "parameters": "oops"}, "parameters"),
    ({"name": "t", "parameters": {"type": "object", "properties": ["a"]}}, "parameters"),
    ({"name": "t", "description": 5}, "description"),
])
def test_a_tool_whose_schema_is_malformed_is_refused(tool, field) -> None:
    message = refusal(tools=[tool])
    assert f"tool 't': {field} must be" in message


def test_sound_checks_controls_and_tools_still_load() -> None:
    scenario = Scenario(**BASE, reference_answer="C-3PO", tools=[
        {"name": "t", "description": None, "parameters": {"type": "object", "properties": {}}}],
        controls=[{"kind": "rate_limit", "turns": [1, 3]}],
        reward={"checks": [{"check": "answer_matches"},
                           {"check": "action_matches", "value": r"\bt\b"},
                           {"check": "observation_contains", "value": "ok!"}]})
    assert scenario.tools[0]["function"]["description"] == ""
    assert scenario.controls[0].turns == [1, 3]


@pytest.mark.parametrize("bad", [{"id": ""}, {"id": "  "}, {"instruction": ""},
                                 {"max_steps": True},
                                 {"tools": [{"name": "t"}, {"name": "t"}]}])
def test_a_blank_id_or_instruction_a_bool_budget_and_repeated_tools_are_refused(
        bad: dict) -> None:
    """Each loaded before: a bool budget as 1 step, a repeated tool as two schemas."""
    fields = {"id": "x", "domain": "search", "instruction": "Find it.",
              "candidate_actions": ["a"], **bad}
    with pytest.raises(pydantic.ValidationError, match=next(iter(bad))):
        Scenario(**fields)
