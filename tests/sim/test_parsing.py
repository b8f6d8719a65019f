"""World-model output parsing, the judge's output, answer matching and the fidelity metric."""

from __future__ import annotations

import math
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_envs.backends import Completion
from agentworld_envs.protocol.chat import Fault
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.world import parsing
from agentworld_envs.world.fidelity import parse_json_observation, step_fidelity, summarise
from agentworld_envs.world.parsing import NO_OUTPUT, OBSERVATION_TAG, parse_world_model_output
from agentworld_envs.world.rewards import answer_matches, read_judge


def obs(text: str) -> str:
    return parse_world_model_output(text).observation


@pytest.mark.parametrize(("raw", "kept"), [
    ("<think>plan</think>screen", "screen"),
    ("<THINK>a</Think>b<think>c</think>d", "bd"),
    ("<think>a<think>nested</think>still thinking</think>after", "after"),
    ("half a thought</think>the screen", "the screen"),
    ("x<think>a</think>y</think>z", "z"),
    ("<think>never closed <predicted_observation>o</predicted_observation>",
     "<predicted_observation>o</predicted_observation>"),
    ("<think>never closed and no tag", ""),
    ("<think>a<predicted_observation>x<think>y</think>z<think>w", ""),  # pairs in order
])
def test_strip_thinking_handles_paired_nested_and_broken_tags(raw: str, kept: str) -> None:
    assert strip_thinking(raw, OBSERVATION_TAG) == kept


def test_last_observation_block_wins_over_earlier_and_fake_ones() -> None:
    raw = ("<think>draft: <predicted_observation>FAKE</predicted_observation></think>"
           "<predicted_observation>first</predicted_observation> text "
           "<predicted_observation>\n  indented line\nsecond\n</predicted_observation> tail")
    out = parse_world_model_output(raw)
    assert out.observation == "indented line\nsecond"  # stripped, as the release strips
    assert out.flags == ()
    assert out.diagnostics["start_tags"] == 3 and out.diagnostics["end_tags"] == 3


def test_unclosed_last_block_runs_to_the_end_and_is_flagged() -> None:
    out = parse_world_model_output("<predicted_observation>done</predicted_observation>"
                                   "<predicted_observation>partial scr")
    assert (out.observation, out.flags) == ("partial scr", ("unclosed_tag",))


def test_no_tag_falls_back_to_cleaned_text_without_the_marker() -> None:
    out = parse_world_model_output("<think>x</think>**Environment Observation:**\nls output")
    assert (out.observation, out.flags) == ("ls output", ("no_tag",))


@pytest.mark.parametrize("raw", ["", "   \n", "<think>only thinking</think>",
                                 "<think>cut off mid-thought"])
def test_nothing_usable_becomes_no_output(raw: str) -> None:
    out = parse_world_model_output(raw)
    assert out.observation == NO_OUTPUT
    assert "no_output" in out.flags


def test_an_empty_block_is_an_empty_observation_not_no_output() -> None:
    out = parse_world_model_output("<think>x</think><predicted_observation> \n"
                                   "</predicted_observation>")
    assert (out.observation, out.flags) == ("", ())


def test_over_long_output_is_cut_and_flagged() -> None:
    out = parse_world_model_output("<predicted_observation>" + "x" * 10_000, max_chars=500)
    assert len(out.observation) == 500
    assert out.observation.endswith("[observation truncated]")
    assert set(out.flags) == {"unclosed_tag", "over_long"}


_PIECES = ["<think>", "</think>", "<THINK>", "<predicted_observation>",
           "</predicted_observation>", "a", " ", "\n", "é", "\x00",
           "**Environment Observation:**"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_parser_reads_as_the_release_unless_it_flags_why_not(raw: str) -> None:
    out = parse_world_model_output(raw)
    assert "think>" not in out.observation.lower()
    if not {"lenient_tag", "stray_close_tag"} & set(out.flags):
        assert out.observation == out.release_observation
    assert ("no_output" in out.flags) == (out.observation == NO_OUTPUT)


_PLAIN_BODY = st.lists(st.sampled_from(["a", " ", "\n", "é", "{}", "**Environment Observation:**",
                                         ">", "x" * 40]), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.tuples(st.sampled_from(["", " ", "\n"]), _PLAIN_BODY, st.sampled_from(["", "\n "]),
                 st.integers(1, 200)))
def test_plain_outputs_read_as_the_general_reading(parts: tuple[str, str, str, int]) -> None:
    """The short cut for one plain block gives what the full reading gives, diagnostics too."""
    lead, body, tail, max_chars = parts
    raw = f"{lead}<predicted_observation>{body}</predicted_observation>{tail}"
    assert parsing._plain_reading(raw) is not None
    fast = parse_world_model_output(raw, max_chars=max_chars)
    with mock.patch.object(parsing, "_plain_reading", return_value=None):
        assert fast == parse_world_model_output(raw, max_chars=max_chars)


@pytest.mark.parametrize("raw", ["<predicted_observation>a<b</predicted_observation>",
                                 "<predicted_observation >a</predicted_observation>",
                                 "<THINK></THINK><predicted_observation>a</predicted_observation>",
                                 "x<predicted_observation>a</predicted_observation>"])
def test_other_outputs_take_the_general_reading(raw: str) -> None:
    assert parsing._plain_reading(raw) is None


@pytest.mark.parametrize(("text", "score"), [
    ('<final_evaluation>{"score": 5, "reason": "ok"}</final_evaluation>', 1.0),
    ('<think>{"score": 1}</think><final_evaluation>```json\n{"score": 3}\n```</final_evaluation>',
     0.5),
    ('blah {"reason": "fine", "score": 2} blah', 0.25),
    ('<final_evaluation>{"score": 4, "reason": "broken json</final_evaluation>', 0.75),
    ('<think>never closed\n<final_evaluation>{"score": 5}</final_evaluation>', 1.0),
])
def test_judge_scores_are_read_and_scaled(text: str, score: float) -> None:
    assert read_judge(Completion(text=text)) == (score, "")


@pytest.mark.parametrize(("outcome", "error"), [
    (Completion(text="no verdict here"), "no score"),
    (Completion(text='<final_evaluation>{"score": 9}</final_evaluation>'), "outside 1-5"),
    (Fault("timeout", "no answer within 1 s"), "judge timeout"),
])
def test_unreadable_judge_outputs_give_nan_and_a_reason(outcome, error: str) -> None:
    score, message = read_judge(outcome)
    assert math.isnan(score) and error in message


@pytest.mark.parametrize(("answer", "expected", "match", "result"), [
    ("The keeper was Maren Holt.", "maren holt", "contains", True),
    ("The keeper was Maren Holtby.", "Maren Holt", "contains", False),
    ("maren  HOLT", "Maren Holt", "exact", True),
    ("There are 1,204 rows", "1204", "number", True),
    ("It opened in 1887, not 1889.", "1889", "number", True),
    ("It opened in 1887.", "1889", "number", False),
    ("anything", "no number", "number", False),
])
def test_answer_matching(answer: str, expected: str, match: str, result: bool) -> None:
    assert answer_matches(answer, expected, match) is result


def test_fidelity_exact_ignores_key_order_and_spacing() -> None:
    fidelity = step_fidelity('{"b": [1, 2], "a": {"x": null}}', '{"a":{"x":null},"b":[1,2]}')
    assert (fidelity.exact, fidelity.structural, fidelity.values) == (True, 1.0, 1.0)


def test_fidelity_structure_holds_when_values_differ() -> None:
    fidelity = step_fidelity('{"id": "P1", "price": 9, "tags": ["a"]}',
                             '{"id": "P1", "price": 12, "tags": ["a"]}')
    assert not fidelity.exact
    assert fidelity.structural == 1.0
    assert fidelity.values == pytest.approx(2 / 3)


def test_fidelity_structural_overlap_counts_paths_and_types() -> None:
    fidelity = step_fidelity('{"id": 1, "extra": true}', '{"id": "1"}')
    # skeletons: {$:object, $.id:number, $.extra:boolean} vs {$:object, $.id:string}
    assert fidelity.structural == pytest.approx(1 / 4)
    assert fidelity.values == 0.0


def test_fidelity_reads_json_lines_and_text() -> None:
    lines = '{"status": "ok"}\n{"status": "error"}'
    assert parse_json_observation(lines) == [{"status": "ok"}, {"status": "error"}]
    assert step_fidelity(lines, lines).exact
    text = step_fidelity("total 4\nfile.txt  ", "total 4\r\nfile.txt")
    assert text.exact and math.isnan(text.structural) and not text.real_json
    broken = step_fidelity("not json", '{"a": 1}')
    assert (broken.structural, broken.values, broken.predicted_json) == (0.0, 0.0, False)


def test_fidelity_summary_and_info_form() -> None:
    steps = [step_fidelity('{"a": 1}', '{"a": 1}'), step_fidelity('{"a": 2}', '{"a": 1}'),
             step_fidelity("x", "y")]
    summary = summarise(steps)
    assert summary["steps"] == 3 and summary["json_steps"] == 2
    assert summary["exact"] == pytest.approx(1 / 3)
    assert summary["structural"] == 1.0 and summary["values"] == 0.5
    assert "structural" not in steps[2].to_dict() and steps[0].to_dict()["exact"] is True
