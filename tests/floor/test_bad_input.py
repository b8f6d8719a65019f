"""Bad agent input never breaks an AgentFloor env.

Hypothesis feeds tool tasks blank text, megabyte strings, broken JSON, wrong and unknown calls,
broken ``<tool_call>`` tags and arbitrary Unicode. ``step()`` must not raise; a broken or wrong
call must come back as error envelopes (one JSON object per line) that say what was wrong, flag
``invalid_action`` and use up one step; plain text must end the episode as a failed final answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from floor_tasks import env_id, load_task
from floor_tasks.env import FloorEnv
from floor_tasks.tools import TOOL_NAMES, FloorToolkit

TOOL_TASKS = ["A1", "C3", "E4"]
ENVELOPE_KEYS = {"tool_name", "call_id", "status", "result", "error"}
FILLER_CALL = '{"name": "no_such_tool", "arguments": {}}'
MEGABYTE = 1 << 20
SETTINGS = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
    HealthCheck.filter_too_much])


@dataclass(frozen=True)
class Expect:
    """What a bad action should produce.

    ``kind`` is ``final`` (a failed final answer), ``error`` (error envelopes; one message holds
    one of ``words``, case-insensitive) or ``any`` (only the general invariants).
    """

    kind: str
    words: tuple[str, ...] = ()
    error_type: str | None = None


FINAL = Expect("final")


def label(expect: Expect) -> str:
    """A short name of the expected outcome, for ``--hypothesis-show-statistics``."""
    return f"{expect.kind} {expect.error_type or ''} {' / '.join(expect.words)}"

# ------------------------------------------------------------------ schema-driven strategies


def _schemas(task_id: str) -> dict[str, dict[str, Any]]:
    """Parameters schema of each tool of the task."""
    return {s["function"]["name"]: s["function"]["parameters"]
            for s in FloorToolkit.schemas(load_task(task_id).tools)}


def _closed_tools(task_id: str) -> list[str]:
    """Tools with required arguments and no extra arguments allowed."""
    return [n for n, p in _schemas(task_id).items()
            if p.get("required") and not p["additionalProperties"]]


def _valid_value(prop: dict[str, Any]) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "P104", "array": ["P104"], "object": {"a": 1, "b": 2}}[prop["type"]]


def _valid_args(task_id: str, tool: str) -> dict[str, Any]:
    params = _schemas(task_id)[tool]
    return {name: _valid_value(params["properties"][name]) for name in params["required"]}


def _call(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False))
small_json = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
WRONG_FOR_TYPE = {
    # No infinities: json.dumps writes them as Infinity, which is not JSON and is rejected as
    # invalid JSON before any schema check (tests/sim/test_hostile_input.py).
    "string": st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                        st.booleans(), st.none(),
                        st.lists(st.text(max_size=3), max_size=3),
                        st.dictionaries(st.text(max_size=3), scalars, max_size=2)),
    "array": st.one_of(st.text(max_size=5), st.integers(), st.none(),
                       st.dictionaries(st.text(max_size=3), scalars, max_size=2),
                       st.lists(st.integers(), min_size=1, max_size=3)),
    "object": st.one_of(st.text(max_size=5), st.integers(), st.none(),
                        st.lists(scalars, max_size=3)),
}
PLAIN = st.characters(blacklist_characters="{[<`")
"""Characters that can never start or mark a tool call."""


@st.composite
def valid_call(draw: st.DrawFn, task_id: str) -> str:
    tool = draw(st.sampled_from(_closed_tools(task_id)))
    return _call(tool, _valid_args(task_id, tool))


@st.composite
def wrong_type_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    tool = draw(st.sampled_from(_closed_tools(task_id)))
    params = _schemas(task_id)[tool]
    name = draw(st.sampled_from(params["required"]))
    args = _valid_args(task_id, tool)
    args[name] = draw(WRONG_FOR_TYPE[params["properties"][name]["type"]])
    return _call(tool, args), Expect("error", (name,), "schema_validation_error")


@st.composite
def extra_argument_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    tool = draw(st.sampled_from(_closed_tools(task_id)))
    params = _schemas(task_id)[tool]
    key = draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in params["properties"]))
    args = {**_valid_args(task_id, tool), key: draw(small_json)}
    return _call(tool, args), Expect("error", ("not permitted",), "schema_validation_error")


@st.composite
def missing_argument_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    tool = draw(st.sampled_from(_closed_tools(task_id)))
    args = _valid_args(task_id, tool)
    name = draw(st.sampled_from(sorted(args)))
    del args[name]
    return _call(tool, args), Expect("error", ("required", "missing"), "schema_validation_error")


@st.composite
def unknown_tool_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    offered = load_task(task_id).tools
    near_misses = [t for t in TOOL_NAMES if t not in offered] + [
        "lookup_records", "LookupRecord", "submit", "lookup record", "search"]
    name = draw(st.sampled_from(near_misses) | st.text(min_size=1, max_size=30).filter(
        lambda n: n.strip() and n.strip() not in offered))
    args = draw(st.dictionaries(st.text(max_size=6), small_json, max_size=3))
    return _call(name, args), Expect("error", ("not available",), "tool_not_available")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is no JSON number")


def _classify_argument_string(text: str) -> Expect | None:
    """What an ``arguments`` value given as a JSON string should produce (None: a valid call)."""
    if not text.strip():
        return None  # read as {}; the missing-argument strategy covers it
    try:  # as the env's parser reads it: NaN and Infinity are no JSON numbers
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return Expect("error", ("not valid JSON",), "parse_error")
    if value is None or isinstance(value, dict):
        return None  # "null" is read as {}
    return Expect("error", ("JSON object",), "parse_error")


@st.composite
def non_object_arguments_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    tool = draw(st.sampled_from(load_task(task_id).tools))
    not_object = st.one_of(st.integers(), st.booleans(), st.lists(small_json, max_size=3),
                           st.floats(allow_nan=False, allow_infinity=False))
    choice = draw(st.sampled_from(["value", "string"]))
    if choice == "value":
        return _call(tool, draw(not_object)), Expect("error", ("JSON object",), "parse_error")
    text = draw(st.text(max_size=40).filter(lambda t: _classify_argument_string(t) is not None))
    return _call(tool, text), _classify_argument_string(text)


@st.composite
def broken_json_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    """Invalid JSON that starts like a call: a cut-off call, or a call with junk after it."""
    call = draw(valid_call(task_id))
    if draw(st.booleans()):
        cut = draw(st.integers(len('{"name":'), len(call) - 1))
        action = call[:cut]
    else:
        action = call + draw(st.sampled_from(["}", "]", ",", "x", "}}}", ', {"name": 1', "'"]))
    return action, Expect("error", ("JSON",), "parse_error")


@st.composite
def deeply_nested_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    """Deep nesting either well inside or far beyond what the JSON decoder accepts."""
    depth = draw(st.integers(1, 150) | st.integers(5_000, 50_000))
    shallow = depth <= 150
    shape = draw(st.sampled_from(["list_value", "dict_value", "list_arguments"]))
    nested_list = "[" * depth + "]" * depth
    if shape == "list_value":
        action = '{"name": "lookup_record", "arguments": {"record_id": ' + nested_list + "}}"
        words = ("record_id",) if shallow else ("JSON",)
    elif shape == "dict_value":
        nested_dict = '{"a": ' * depth + "1" + "}" * depth
        action = '{"name": "lookup_record", "arguments": {"record_id": ' + nested_dict + "}}"
        words = ("record_id",) if shallow else ("JSON",)
    else:
        action = '{"name": "lookup_record", "arguments": ' + nested_list + "}"
        words = ("JSON object",) if shallow else ("JSON",)
    return action, Expect("error", words)


no_tags = st.text(max_size=60).filter(lambda t: "<tool_call>" not in t and "</tool_call>" not in t)


@st.composite
def broken_tag_call(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    before = draw(no_tags)
    kind = draw(st.sampled_from(["cut_call", "junk", "not_a_call", "unclosed"]))
    if kind == "cut_call":
        call = draw(valid_call(task_id))
        body = call[: draw(st.integers(0, len(call) - 1))]
        return f"{before}<tool_call>{body}</tool_call>", Expect("error", ("JSON",), "parse_error")
    if kind == "junk":
        # junk as the parser reads a tag's body: stripped (so "0\f" is the number 0, not junk)
        body = draw(no_tags.filter(
            lambda t: (expect := _classify_argument_string(t.strip())) is not None
            and "not valid" in expect.words[0]))
        return f"{before}<tool_call>{body}</tool_call>", Expect("error", ("JSON",), "parse_error")
    if kind == "not_a_call":
        body = draw(st.sampled_from(["[]", "{}", "42", '"lookup_record"', '{"name": "x"}',
                                     '[{"arguments": {}}]', "null"]))
        return (f"{before}<tool_call>{body}</tool_call>",
                Expect("error", ("expected",), "parse_error"))
    body = draw(st.one_of(no_tags, valid_call(task_id)))
    return f"{before}<tool_call>{body}", Expect("error", ("unclosed",), "parse_error")


blank = st.sampled_from(["", " ", "\n", "\t\r\n  ", "\u3000\u00a0"]) | st.text(
    alphabet=" \t\r\n", max_size=40)


@st.composite
def huge_action(draw: st.DrawFn, task_id: str) -> tuple[str, Expect]:
    """A 1-2 MB action: plain text (a final answer) or a cut-off call (a JSON error)."""
    size = draw(st.integers(MEGABYTE, 2 * MEGABYTE))
    if draw(st.booleans()):
        chunk = draw(st.text(PLAIN, min_size=1, max_size=16))
        return (chunk * (size // len(chunk) + 1))[:size], FINAL
    filler = draw(st.sampled_from(["x", "ab c", "é中🙂", "0"]))
    head = '{"name": "lookup_record", "arguments": {"record_id": "'
    return head + filler * (size // len(filler)), Expect("error", ("JSON",), "parse_error")


def bad_actions(task_id: str) -> st.SearchStrategy[tuple[str, Expect]]:
    """Every kind of bad action with its expected outcome."""
    return st.one_of(
        blank.map(lambda a: (a, FINAL)),
        st.text(PLAIN, min_size=1).map(lambda a: (a, FINAL)),
        huge_action(task_id),
        broken_json_call(task_id),
        unknown_tool_call(task_id),
        wrong_type_call(task_id),
        extra_argument_call(task_id),
        missing_argument_call(task_id),
        non_object_arguments_call(task_id),
        deeply_nested_call(task_id),
        broken_tag_call(task_id),
        st.text().map(lambda a: (a, Expect("any"))),
    )


# ------------------------------------------------------------------ checks


def envelopes_of(obs: str) -> list[dict[str, Any]]:
    """Parse a non-empty observation: one well-formed result envelope per line."""
    lines = [json.loads(line) for line in obs.split("\n")]
    for envelope in lines:
        assert isinstance(envelope, dict) and set(envelope) == ENVELOPE_KEYS, envelope
        assert envelope["status"] in ("ok", "not_found", "error")
    return lines


def check_step(env: gym.Env, action: Any, expect: Expect) -> None:
    """Step once with a bad action, check the outcome, then check the step was counted."""
    budget = env.unwrapped.max_steps
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and obs in env.observation_space
    assert reward == 0.0 and not truncated
    assert ("verdict" in info) == terminated
    if obs:
        envelopes = envelopes_of(obs)
    else:
        envelopes = []
        assert terminated and info["termination"] == "final_answer"
    if expect.kind == "final":
        assert obs == "" and terminated and not info["invalid_action"]
        assert info["verdict"]["passed"] is False
        return
    if expect.kind == "error":
        assert not terminated and info["invalid_action"] is True
        assert envelopes and all(e["status"] == "error" for e in envelopes), envelopes
        messages = [e["error"]["message"].lower() for e in envelopes]
        assert any(w.lower() in m for w in expect.words for m in messages), (expect, messages)
        if expect.error_type:
            assert expect.error_type in [e["error"]["type"] for e in envelopes]
    if terminated:
        return
    for turn in range(2, budget + 1):  # the bad action used up turn 1 of the budget
        _, reward, terminated, truncated, info = env.step(FILLER_CALL)
        assert not terminated and truncated == (turn == budget) and reward == 0.0
    assert info["verdict"]["failure_class"] == "F4"


@pytest.mark.parametrize("task_id", TOOL_TASKS)
def test_bad_actions_never_break_the_env(task_id: str) -> None:
    env = gym.make(env_id(task_id))

    @SETTINGS
    @given(case=bad_actions(task_id), seed=st.integers(0, 2**16))
    def run(case: tuple[str, Expect], seed: int) -> None:
        env.reset(seed=seed)
        event(label(case[1]))
        check_step(env, *case)

    run()


@pytest.mark.parametrize("task_id", TOOL_TASKS)
@pytest.mark.parametrize("strategy", [wrong_type_call, extra_argument_call, missing_argument_call,
                                      unknown_tool_call, broken_tag_call])
def test_wrong_calls_are_reported(task_id: str, strategy: Any) -> None:
    """Each kind of wrong call on its own, so every kind gets examples."""
    env = gym.make(env_id(task_id))

    @settings(SETTINGS, max_examples=40)
    @given(case=strategy(task_id))
    def run(case: tuple[str, Expect]) -> None:
        env.reset(seed=0)
        event(label(case[1]))
        check_step(env, *case)

    run()


@pytest.mark.parametrize("task_id", TOOL_TASKS)
def test_plain_text_is_a_failed_final_answer(task_id: str) -> None:
    env = FloorEnv(task_id)

    @settings(SETTINGS, max_examples=50)
    @given(text=st.text(PLAIN))
    def run(text: str) -> None:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(text)
        assert (obs, reward, terminated, truncated) == ("", 0.0, True, False)
        assert info["termination"] == "final_answer" and info["verdict"]["passed"] is False
        obs, _, terminated, _, _ = env.step(FILLER_CALL)
        assert terminated and "ended" in obs

    run()


@pytest.mark.parametrize("action", [None, 42, 3.5, b"bytes", ["x"],
                                    {"name": "lookup_record", "arguments": {"record_id": "P104"}}])
@pytest.mark.parametrize("wrapped", [False, True], ids=["raw", "gym_make"])
def test_non_string_actions_do_not_raise(action: Any, wrapped: bool) -> None:
    env = gym.make("AgentFloor/A1-v0") if wrapped else FloorEnv("A1")
    env.reset(seed=0)
    check_step(env, action, Expect("error", ("must be a string",), "parse_error"))


# ------------------------------------------------------------------ pinned edge cases


@pytest.mark.parametrize("action", [
    '{"name": "lookup_record", "arguments": {"record_id": %s}}' % ("7" * 5000),
    '{"name": "lookup_record", "arguments": "{\\"record_id\\": %s}"}' % ("7" * 5000),
    '```json\n{"name": "lookup_record", "arguments": {"record_id": %s}}\n```' % ("7" * 5000),
    _call("compute_value", {"operation": "multiply", "inputs": {"a": 10**4000, "b": 10**4000}}),
], ids=["literal", "string_arguments", "fenced", "huge_product"])
def test_huge_integers_do_not_raise(action: str) -> None:
    """Python refuses int <-> str conversions over 4300 digits; step() must still answer."""
    env = FloorEnv("C3")
    env.reset(seed=0)
    obs, reward, terminated, _, _ = env.step(action)
    assert obs in env.observation_space and envelopes_of(obs)
    assert reward == 0.0 and not terminated


def test_nesting_at_the_recursion_limit_does_not_raise() -> None:
    """Scan the depths where the JSON decoder just copes but re-encoding may not."""
    env = FloorEnv("A1")
    failures = []
    for depth in range(400, 1100):
        for template in ('{"name": "lookup_record", "arguments": %s}',
                         '{"name": "lookup_record", "arguments": {"record_id": %s}}',
                         '<tool_call>{"name": "lookup_record", "arguments": %s}</tool_call>'):
            env.reset(seed=0)
            try:
                obs, *_ = env.step(template % ("[" * depth + "]" * depth))
                envelopes_of(obs)
            except Exception as exc:  # noqa: BLE001 - collect them all for one report
                failures.append((depth, template[:40], type(exc).__name__))
    assert not failures, failures[:5]


@pytest.mark.parametrize("action", [
    '{"name": "lookup_record", "arguments": {"record_id": "%s"}}' % ("x" * (3 * MEGABYTE // 2)),
    '{"name": "%s", "arguments": {}}' % ("y" * (3 * MEGABYTE // 2)),
], ids=["huge_record_id", "huge_tool_name"])
def test_oversized_results_stay_json_envelopes(action: str) -> None:
    """A call whose envelope exceeds the observation limit must still yield JSON lines."""
    env = FloorEnv("A1")
    env.reset(seed=0)
    obs, _, terminated, _, info = env.step(action)
    assert obs in env.observation_space and not terminated
    assert all(e["status"] != "ok" for e in envelopes_of(obs))


@pytest.mark.parametrize("action", [
    '{"name" "lookup_record", "arguments": {"record_id": "P104"}}',
    '{"name" lookup_record}',
    '{"name"',
])
def test_broken_call_without_colon_is_not_a_final_answer(action: str) -> None:
    """Invalid JSON that opens with ``{"name"`` is an attempted call, not the agent's answer."""
    env = FloorEnv("A1")
    env.reset(seed=0)
    obs, _, terminated, _, info = env.step(action)
    assert not terminated and info["invalid_action"] is True
    assert "json" in envelopes_of(obs)[0]["error"]["message"].lower()


@pytest.mark.parametrize(("a", "b", "expected"), [
    (1e154, 1e154, None),  # was the 309-digit integer 1000...0
    (-1e15, 1, None),
    (1e7, 99_999_999.9, 999_999_999_000_000),
    (0.1, 0.2, 0.02),
])
def test_compute_results_stay_within_json_and_the_parsers_limits(a: float, b: float,
                                                                 expected: Any) -> None:
    from agentworld_envs.protocol.bounded_json import loads
    from agentworld_envs.protocol.tool_calls import ToolCall
    from floor_tasks.database import load_fixture

    kit = FloorToolkit(load_fixture("B1_product_catalog"), lambda decision: False)
    call = ToolCall("compute_value", {"operation": "multiply", "inputs": {"a": a, "b": b}})
    envelope = kit.dispatch(call, {"compute_value"}, "x")
    if expected is None:
        assert envelope["status"] == "error" and envelope["error"]["type"] == "out_of_range"
    else:
        assert envelope["result"]["value"] == expected
        assert loads(json.dumps(envelope))["result"]["value"] == expected  # an agent can echo it
