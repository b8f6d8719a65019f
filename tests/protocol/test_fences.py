"""Fenced tool calls: a fence ends outside the call's JSON strings, in linear time, and a fence
opened with a Windows line end is a fence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentworld_envs.protocol import bounded_json, parse_action
from agentworld_envs.protocol.bounded_json import fenced_blocks, unfence

MARKDOWN = "# Title\n```python\nprint('hi')\n```\nThe end."
CALL = {"name": "write_file", "arguments": {"path": "README.md", "content": MARKDOWN}}


@pytest.mark.parametrize("language", ["json", "", "tool_call", "JSON"])
def test_a_markdown_fence_inside_an_argument_does_not_end_the_call(language: str) -> None:
    action = f"I will write it.\n```{language}\n{json.dumps(CALL, indent=2)}\n```\nDone."
    parsed = parse_action(action)
    assert parsed.errors == []
    assert [c.to_dict() for c in parsed.calls] == [CALL]
    assert parsed.text == "I will write it.\n\nDone."


def test_every_fenced_call_of_an_action_keeps_its_markdown() -> None:
    second = {"name": "note", "arguments": {"text": "``` alone, then \"```json\" quoted"}}
    action = (f"```json\n{json.dumps([CALL])}\n```\nthen\n```json\n{json.dumps(second)}\n```")
    parsed = parse_action(action)
    assert [c.to_dict() for c in parsed.calls] == [CALL, second]
    assert parsed.text == "then"


def test_other_fences_still_end_at_the_next_backticks() -> None:
    text = '```bash\necho "```"\n```'
    assert [f.body for f in fenced_blocks(text, json_languages={"json"})] == ['echo "']


def test_a_fence_with_an_unclosed_string_on_its_last_line_still_ends() -> None:
    """No end outside a string: the next three backticks end it, as before."""
    text = '```json\n{"name": "a", "arguments": {"x": "oops```\nafter'
    fences = list(fenced_blocks(text, json_languages={"json"}))
    assert [f.body for f in fences] == ['{"name": "a", "arguments": {"x": "oops']


class _CountingPattern:
    """Wraps the fence-end pattern and counts the characters each scan reads."""

    def __init__(self, pattern: Any) -> None:
        self.pattern, self.read = pattern, 0

    def finditer(self, text: str, pos: int) -> Iterator[Any]:
        end = pos
        try:
            for match in self.pattern.finditer(text, pos):
                end = match.end()
                yield match
            end = len(text)
        finally:
            self.read += end - pos


@pytest.mark.parametrize("unit", ['"```\n', '```json\n"```\n', '```json\n{"a": "```"}\n```\n'])
def test_finding_fence_ends_reads_each_character_a_bounded_number_of_times(
        monkeypatch: pytest.MonkeyPatch, unit: str) -> None:
    """Fences whose ends no scan finds (each line opens a string that hides the backticks)
    would each rescan the rest of the text: quadratic without the shortcut."""
    counting = _CountingPattern(bounded_json._JSON_FENCE_TOKEN)
    monkeypatch.setattr(bounded_json, "_JSON_FENCE_TOKEN", counting)
    text = "```json\n" + unit * 5_000
    list(fenced_blocks(text, json_languages={"json", ""}))
    assert counting.read <= 2 * len(text)


def test_a_fenced_call_with_windows_line_ends_is_a_call_not_a_final_answer() -> None:
    action = "Looking it up.\r\n```json\r\n" + json.dumps(CALL) + "\r\n```\r\n"
    parsed = parse_action(action)
    assert not parsed.is_final_answer
    assert [c.to_dict() for c in parsed.calls] == [CALL]
    assert parsed.text == "Looking it up."


def test_unfence_reads_a_fence_with_windows_line_ends() -> None:
    assert unfence("```bash\r\nls -la\r\n```") == "ls -la"


@pytest.mark.parametrize("action", [
    'Calling it.\n```json\n{"name": "lookup", "arguments": {"id": "P1"}}',
    '```json\n{"name": "lookup", "arguments": {"id": "P1',  # cut by max_tokens
    '```json\n{"name": "a", "arguments": {}}\n```\nand\n```\n{"name": "b", "arguments": {}}',
])
def test_an_unclosed_fence_holding_a_call_is_an_error_not_a_final_answer(action: str) -> None:
    """An agent's call cut short must not end the episode as its final answer."""
    parsed = parse_action(action)
    assert not parsed.is_final_answer
    assert [e.message for e in parsed.errors] == ["unclosed ``` fence"]
    assert parse_action("```\nprose, never closed").is_final_answer
