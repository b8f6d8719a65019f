"""The shared text protocol: text space, tool-call parser and generated tool schemas."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld_envs.protocol import UnicodeText, format_tool_call, parse_action
from agentworld_envs.protocol.tool_calls import MAX_ERRORS, MAX_NAME_LENGTH
from agentworld_envs.protocol.tools import (
    ToolArgumentError,
    Toolkit,
    UnknownToolError,
    function_schema,
    tool,
)

# ---------------------------------------------------------------- text space


def test_text_space_accepts_any_unicode_and_empty() -> None:
    space = UnicodeText(max_length=50)
    for text in ["", "hello world", "café ☕\n{\"a\": [1, 2]}", "中文\t🙂"]:
        assert text in space
    assert "x" * 51 not in space
    assert 7 not in space and None not in space and b"bytes" not in space


def test_text_space_samples_are_members_and_seeded() -> None:
    a, b = UnicodeText(300, seed=3), UnicodeText(300, seed=3)
    samples = [a.sample() for _ in range(20)]
    assert samples == [b.sample() for _ in range(20)]
    assert all(s in a and len(s) <= 256 for s in samples)


def test_min_length_is_respected() -> None:
    space = UnicodeText(10, min_length=2)
    assert "a" not in space and "ab" in space


# ---------------------------------------------------------------- tool-call parser

CALL = {"name": "lookup_record", "arguments": {"record_id": "P104"}}


@pytest.mark.parametrize("action", [
    json.dumps(CALL),
    "  " + json.dumps(CALL) + "\n",
    json.dumps({"type": "function", "id": "c1", "function": {
        "name": "lookup_record", "arguments": json.dumps(CALL["arguments"])}}),
    f"Let me check.\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
    f"I will look it up:\n```json\n{json.dumps(CALL)}\n```\nthen answer.",
    json.dumps({"name": "lookup_record", "parameters": {"record_id": "P104"}}),
])
def test_single_call_formats(action: str) -> None:
    parsed = parse_action(action)
    assert [c.to_dict() for c in parsed.calls] == [CALL]
    assert not parsed.errors and not parsed.is_final_answer


def test_list_and_multiple_tags_keep_order() -> None:
    second = {"name": "get_attribute", "arguments": {"record_id": "P1", "attribute": "x"}}
    assert [c.name for c in parse_action(json.dumps([CALL, second])).calls] == [
        "lookup_record", "get_attribute"]
    tags = "".join(format_tool_call(c["name"], c["arguments"], "hermes") for c in [second, CALL])
    assert [c.name for c in parse_action(tags).calls] == ["get_attribute", "lookup_record"]


@pytest.mark.parametrize("text", [
    "The status of P104 is active.",
    "",
    '{"vendor_name": "Pinnacle", "year_established": 2017}',
    "```python\nprint({'name': 1, 'arguments': 2})\n```",
    '["bug"]',
    "{not json at all",
])
def test_text_without_calls_is_a_final_answer(text: str) -> None:
    parsed = parse_action(text)
    assert parsed.is_final_answer
    assert parsed.text == text.strip()


@pytest.mark.parametrize("action, fragment", [
    ('{"name": "lookup_record", "arguments": {"record_id": ', "invalid JSON"),
    ("<tool_call>{broken}</tool_call>", "invalid JSON"),
    ('<tool_call>{"name": "lookup_record", "arguments": {}}', "unclosed"),
    ('{"name": "lookup_record", "arguments": "{bad"}', "not valid JSON"),
    ('{"name": "lookup_record", "arguments": [1, 2]}', "must be a JSON object"),
    ('{"name": "", "arguments": {}}', "non-empty"),
    ("<tool_call>[1, 2]</tool_call>", "expected"),
])
def test_broken_calls_are_structured_errors(action: str, fragment: str) -> None:
    parsed = parse_action(action)
    assert not parsed.calls and len(parsed.errors) == 1
    assert fragment in parsed.errors[0].message
    assert not parsed.is_final_answer


def test_non_string_action_is_an_error_not_an_exception() -> None:
    for action in (None, 42, {"name": "x"}, b"bytes"):
        parsed = parse_action(action)
        assert parsed.errors and "must be a string" in parsed.errors[0].message


# Pieces of the protocol's syntax, so that the fuzzed text holds tags, fences, brackets, keys and
# numbers out of bounds in every arrangement, not only the plain prose a random string is.
FRAGMENTS = ["{", "}", "[", "]", '"', ":", ",", "\\", "\n", " ", "```", "```json\n",
             "```tool\n", "<tool_call>", "</tool_call>", '"name"', '"arguments"', '"function"',
             '"parameters"', '"type"', '"id"', '"f"', '"{}"', "null", "1", "1e999", "NaN", "{}",
             "[]", '{"name": "f", "arguments": {}}', '{"name": " ", "arguments": {}}']
NOISE = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=30).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text(max_size=6)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=8)
NAMES = st.text(min_size=1, max_size=40).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None)
@given(noise=NOISE | st.text(), after=NOISE, name=NAMES,
       arguments=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3))
def test_parser_never_raises(noise: str, after: str, name: str, arguments: dict) -> None:
    """On any text the parser returns (never raises) and keeps its promises: a final answer is
    the whole text, every call it reads is well formed and reads back the same once written,
    errors are capped; and a well-formed tagged call in the noise is still found."""
    parsed = parse_action(noise)
    assert all(error.message for error in parsed.errors)
    assert len(parsed.errors) <= MAX_ERRORS + 1  # the rest are counted in one more error
    if parsed.is_final_answer:
        assert parsed.text == noise.strip()  # no text of a final answer is lost
    if "<tool_call>" not in noise and "```" not in noise and noise.strip()[:1] not in "{[":
        assert parsed.is_final_answer
    for call in parsed.calls:
        assert call.name == call.name.strip() and 0 < len(call.name) <= MAX_NAME_LENGTH
        assert isinstance(call.arguments, dict)
        for style in ("json", "hermes"):
            again = parse_action(format_tool_call(call.name, call.arguments, style))
            assert [c.to_dict() for c in again.calls] == [call.to_dict()] and not again.errors
    if "<tool_call>" not in noise:  # an unclosed tag before it would swallow the call
        embedded = f"{noise}\n{format_tool_call(name, arguments, 'hermes')}\n{after}"
        found = [c.to_dict() for c in parse_action(embedded).calls]
        assert {"name": name, "arguments": arguments} in found


@settings(max_examples=200, deadline=None)
@given(prose=st.text(alphabet=st.characters(blacklist_characters='<>{}[]"\\')),
       name=st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True),
       arguments=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5),
                                 max_size=3))
def test_a_tagged_call_after_any_prose_is_read_exactly(prose: str, name: str,
                                                       arguments: dict) -> None:
    for action in (f"{prose}\n{format_tool_call(name, arguments, 'hermes')}",
                   f"  {format_tool_call(name, arguments, 'json')}\n"):  # bare JSON: alone
        parsed = parse_action(action)
        assert [c.to_dict() for c in parsed.calls] == [{"name": name, "arguments": arguments}]
        assert not parsed.errors


def test_format_tool_call_round_trips() -> None:
    for style in ("json", "hermes"):
        assert parse_action(format_tool_call("f", {"a": 1}, style)).calls[0].to_dict() == {
            "name": "f", "arguments": {"a": 1}}
    with pytest.raises(ValueError, match="unknown tool-call style"):
        format_tool_call("f", {}, "xml")


# ---------------------------------------------------------------- generated tool schemas


class Shop(Toolkit):
    @tool
    def find(self, query: str, limit: int = 5, tags: list[str] | None = None) -> list[str]:
        """Find products by name.

        Longer description that is not part of the summary.

        Args:
            query: Text to look for.
            limit: Most results to return,
                counted after filtering.
            tags: Only products with these tags.
        """
        return [query] * limit

    @tool(kind="write")
    def order(self, sku: str, mode: Literal["fast", "cheap"]) -> str:
        """Place an order.

        Args:
            sku: The product.
            mode: Shipping mode.
        """
        return f"{sku}:{mode}"

    @tool
    def note(self, **fields: str) -> dict:
        """Store free-form fields.

        Args:
            **fields: Anything to store.
        """
        return fields

    def helper(self) -> None:
        """Not a tool."""


def test_schema_comes_from_signature_and_docstring() -> None:
    schema = function_schema(Shop.find)
    fn = schema["function"]
    assert schema["type"] == "function" and fn["name"] == "find"
    assert fn["description"] == "Find products by name."
    params = fn["parameters"]
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    assert params["properties"]["query"] == {"type": "string", "description": "Text to look for."}
    assert params["properties"]["limit"]["default"] == 5
    assert params["properties"]["limit"]["description"] == (
        "Most results to return, counted after filtering.")
    assert "title" not in json.dumps(schema)


def test_literal_becomes_enum_and_kwargs_an_open_object() -> None:
    order = function_schema(Shop.order)["function"]["parameters"]
    assert order["properties"]["mode"]["enum"] == ["fast", "cheap"]
    note = function_schema(Shop.note)["function"]["parameters"]
    assert note["additionalProperties"] is True and note["description"] == "Anything to store."


def test_toolkit_lists_only_tools() -> None:
    assert Shop.tool_names() == ["find", "note", "order"]
    assert [s["function"]["name"] for s in Shop.schemas(["order", "find"])] == ["order", "find"]


def test_calls_are_validated_against_the_signature() -> None:
    shop = Shop()
    assert shop.call("find", {"query": "x", "limit": 2}) == ["x", "x"]
    assert shop.call("note", {"a": "1", "b": "2"}) == {"a": "1", "b": "2"}
    with pytest.raises(ToolArgumentError, match="limit"):
        shop.call("find", {"query": "x", "limit": "2"})  # strict: no string-to-int coercion
    with pytest.raises(ToolArgumentError, match="surprise"):
        shop.call("find", {"query": "x", "surprise": 1})
    with pytest.raises(ToolArgumentError, match="query"):
        shop.call("find", {})
    with pytest.raises(ToolArgumentError, match="mode"):
        shop.call("order", {"sku": "A", "mode": "slow"})
    with pytest.raises(UnknownToolError):
        shop.call("helper", {})


def test_limits_on_names_and_nesting() -> None:
    long_name = parse_action(json.dumps({"name": "x" * 200, "arguments": {}}))
    assert "at most 128" in long_name.errors[0].message
    deep: object = 1
    for _ in range(40):
        deep = [deep]
    nested = parse_action(json.dumps({"name": "f", "arguments": {"a": 1, "b": deep}}))
    assert "argument 'b'" in nested.errors[0].message and not nested.calls


@pytest.mark.parametrize(("levels", "too_deep"), [(31, False), (32, True)])
@pytest.mark.parametrize("as_string", [False, True])
def test_argument_nesting_limit_is_exact(levels: int, too_deep: bool, as_string: bool) -> None:
    """An argument nested 32 levels deep is refused, 31 is not, whether the arguments are an
    object or a JSON string holding one (whose brackets the parser's shortcut also counts)."""
    value: object = 1
    for _ in range(levels):
        value = [value]
    arguments = {"b": value}
    call = {"name": "f", "arguments": json.dumps(arguments) if as_string else arguments}
    parsed = parse_action(json.dumps(call))
    assert bool(parsed.errors) == too_deep and bool(parsed.calls) != too_deep
