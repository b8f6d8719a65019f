"""Parsing of agent and model text stays linear and reads what it says it reads.

Each test pins a defect found in review: work (counted, or memory measured) that grew with the
square of one value's size, a depth limit that escapes hid, and a call drafted in reasoning
that the env played.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_envs.protocol import bounded_json
from agentworld_envs.protocol.chat import Completion
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.protocol.tool_calls import MAX_ARGUMENT_DEPTH, parse_action
from agentworld_envs.world import fidelity
from agentworld_envs.world.fidelity import parse_json_observation, step_fidelity

# --- find_objects: a failed value's parts are judged in one pass --------------------------


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    number_problem = bounded_json._number_problem

    def counted(item: Any) -> bool:
        calls[0] += 1
        return number_problem(item)

    monkeypatch.setattr(bounded_json, "_number_problem", counted)
    return calls


@pytest.mark.parametrize("text", [
    '{"x": 1e999, "a": ' + '{"a": ' * 400 + '{"y": 1e999}' + "}" * 401,  # a bad number
    '{"a": ' + '[{"a": ' * 400 + "1" + "}]" * 400 + ", oops",  # a syntax error
], ids=["bad_number", "syntax_error"])
def test_a_failed_value_is_read_a_bounded_number_of_times_per_character(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Each object that completed inside a failed value was walked to its leaves again (400
    levels: over 100,000 checks for 3 KB); now each is read once."""
    calls = _counting(monkeypatch)
    list(bounded_json.find_objects(text))
    assert calls[0] <= len(text)


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every object in a value, inner ones first."""
    found: list[dict[str, Any]] = []
    for item in (value.values() if isinstance(value, dict)
                 else value if isinstance(value, list) else ()):
        found.extend(_objects(item))
    return [*found, value] if isinstance(value, dict) else found


def _sound_parts(completed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference: the objects in bounds that no other object in bounds holds."""
    sound = [obj for obj in completed if bounded_json.is_bounded(obj)]
    inner = {id(inside) for obj in sound for inside in _objects(obj)[:-1]}
    return [obj for obj in sound if id(obj) not in inner]


_LEAVES = st.sampled_from(["1", "1e999", "2.5", '"s"', "null", "9" * 301, "[]", "{}"])
_JSON = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
    st.lists(st.tuples(st.sampled_from("abc"), inner), max_size=3).map(
        lambda pairs: "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}")), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_JSON, st.sampled_from(["{", "}", "]", ",", "x"])), max_size=4),
       st.integers(0, 50))
def test_the_parts_of_a_failed_value_are_the_sound_outermost_objects(parts: list[str],
                                                                     cut: int) -> None:
    text = " ".join(parts)
    text = text[:len(text) - cut] if cut < len(text) else text
    completed: list[dict[str, Any]] = []
    decoder = bounded_json._collecting_decoder(completed)
    try:
        bounded_json._decode(decoder, text, 0, completed)
    except bounded_json.JSONError:
        pass
    assert bounded_json._sound_parts(completed) == _sound_parts(completed)


@pytest.mark.parametrize("levels", [199, 200, 201])
def test_the_depth_bound_holds_for_the_parts_of_a_failed_value(levels: int) -> None:
    """The outermost object in bounds inside a failed value is found, however deep it sits."""
    inner = '{"a": ' * (levels - 1) + '{"a": 1}' + "}" * (levels - 1)
    found = list(bounded_json.find_objects('{"bad": 1e999, "x": [' + inner + "]}"))
    assert [bounded_json.depth(obj) for obj in found] == [min(levels, bounded_json.MAX_DEPTH)]


# --- fidelity: the fence is read in one pass, paths cost one id each ------------------------

_FENCE = re.compile(r"^```(?:(?i:json))?\s*\n(.*?)\n?```$", re.DOTALL)
"""The fence pattern this module used: quadratic on a fence of blank lines, kept as the
reference of what a fence is on short texts (with its tag in any case, as fidelity reads it
since ``4b20127``: ```` ```JSON ```` is a JSON fence)."""


def test_a_fence_of_a_million_blank_lines_is_read_in_one_pass() -> None:
    """The old pattern backtracked through every blank line for each one (about 10 s at 32,000
    lines, hours at a million)."""
    assert step_fidelity("```json" + "\n" * 1_000_000 + "x", '{"a": 1}').predicted_json is False
    assert parse_json_observation("```json" + "\n" * 1_000_000 + '{"a": 1}\n```') == {"a": 1}


def _old_body(text: str) -> str:
    """What the old pattern left of a text to read as JSON."""
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["```", "`", "json", "JSON", "\n", " ", "\t", "\u2028", "{}",
                                 "[1]", '"a"', "x"]), max_size=12).map("".join))
def test_a_fence_is_read_as_the_old_pattern_read_it(text: str) -> None:
    """The rest of ``parse_json_observation`` is as it was, so equal bodies read alike."""
    normal = fidelity._normal_text(text)
    assert fidelity._fence_body(normal) == _old_body(normal)


def test_fidelity_memory_does_not_grow_with_key_length_times_leaves() -> None:
    """A path was a string of every key above it, so a 20,000-character key over 2,000 leaves
    took 160 MB for a 31 KB document; a path is now one id."""
    document = json.dumps({"k" * 20_000: list(range(2_000))})
    tracemalloc.start()
    try:
        fidelity = step_fidelity(document, document)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fidelity.exact and fidelity.values == 1.0
    assert peak <= 200 * len(document)


def test_fidelity_paths_keep_a_dotted_key_apart_from_nesting() -> None:
    """``$.a.b`` named both a key ``a.b`` and a key ``b`` under ``a``, so they agreed."""
    fidelity = step_fidelity('{"a.b": 1}', '{"a": {"b": 1}}')
    assert fidelity.values == 0.0 and fidelity.structural == 1 / 4
    assert step_fidelity('{"0": 1}', "[1]").values == 0.0


# --- tool calls ---------------------------------------------------------------------------


@pytest.mark.parametrize("hermes", [False, True])
def test_escaped_brackets_do_not_hide_arguments_nested_too_deeply(hermes: bool) -> None:
    """Arguments given as a JSON string were judged by the payload's brackets, which ``\\u005b``
    escapes hide: 100 levels passed the limit of 32."""
    deep = r"{\u0022b\u0022:" + r"\u005b" * 100 + "1" + r"\u005d" * 100 + "}"
    payload = '{"name": "f", "arguments": "' + deep + '"}'
    parsed = parse_action(f"<tool_call>{payload}</tool_call>" if hermes else payload)
    assert not parsed.calls
    assert f"nested more than {MAX_ARGUMENT_DEPTH} levels" in parsed.errors[0].message


def test_escaped_brackets_within_the_limit_still_make_a_call() -> None:
    shallow = r"{\u0022b\u0022:" + r"\u005b" * 5 + "1" + r"\u005d" * 5 + "}"
    parsed = parse_action('{"name": "f", "arguments": "' + shallow + '"}')
    assert parsed.calls[0].arguments == {"b": [[[[[1]]]]]} and not parsed.errors


# --- reasoning ----------------------------------------------------------------------------

DRAFT = ('<tool_call>{"name": "submit_answer", "arguments": {"answer": "47"}}</tool_call>')


@pytest.mark.parametrize("text", [
    f"<think>I could {DRAFT} but I am unsure</think>I could not find the answer.",
    f"<think>I could {DRAFT}",
    f"I could {DRAFT} but I am unsure</think>I could not find the answer.",
])
def test_a_call_drafted_only_in_the_reasoning_is_not_played(text: str) -> None:
    """A backend reads calls from the text without its reasoning; the action it played was the
    raw text, whose reasoning the env's parser read as a call."""
    completion = Completion(text, tool_calls=parse_action(strip_thinking(text)).calls)
    assert completion.tool_calls == []
    action = completion.to_action()
    assert "<think>" not in action and "</think>" not in action
    assert parse_action(action).calls == []


def test_a_text_without_think_tags_is_played_unchanged() -> None:
    assert Completion("  the answer is 42\n").to_action() == "  the answer is 42\n"
