"""One parser for every way an agent writes a tool call.

An action is a string. It may hold:

* an OpenAI-style call ``{"name": ..., "arguments": {...}}`` (``arguments`` may also be a JSON
  string, and the call may be wrapped as ``{"type": "function", "function": {...}}``), or a
  JSON list of such calls;
* Hermes-style ``<tool_call>{...}</tool_call>`` tags, anywhere in the text;
* fenced ```` ```json ```` blocks holding one call or a list of calls.

Text with no tool call is a final answer. Text that clearly tries to call a tool but cannot be
read yields a :class:`ParseError`; the parser itself never raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_envs.protocol.bounded_json import JSONError, depth, fenced_blocks, loads

__all__ = ["MAX_ERRORS", "ToolCall", "ParseError", "ParsedAction", "parse_action",
           "format_tool_call"]

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_CALL_FENCES = ("", "json", "tool_call", "tool")
# A broken payload still counts as an attempted call when it names a function.
_LOOKS_LIKE_CALL = re.compile(r'"(?:name|function|arguments)"')
MAX_NAME_LENGTH = 128
MAX_ARGUMENT_DEPTH = 32
MAX_ERRORS = 32
"""Parse errors reported for one action; the rest are counted in one more error."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call read from an action: the tool's name and its argument object."""

    name: str
    arguments: dict[str, Any]
    call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the OpenAI-style ``{"name", "arguments"}`` form."""
        return {"name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ParseError:
    """Why a piece of the action could not be read as a tool call."""

    message: str
    snippet: str

    def to_dict(self) -> dict[str, str]:
        """Return a JSON-ready form."""
        return {"message": self.message, "snippet": self.snippet}


@dataclass(slots=True)
class ParsedAction:
    """The calls, parse errors and final-answer text found in one action."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    text: str = ""

    @property
    def is_final_answer(self) -> bool:
        """True when the action holds neither a call nor an attempted call."""
        return not self.calls and not self.errors


def _snippet(text: str, limit: int = 120) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_snippet(value: Any) -> str:
    try:
        return _snippet(json.dumps(value, ensure_ascii=False))
    except (ValueError, RecursionError):
        return _snippet(f"<{type(value).__name__} that cannot be shown>")


def _brackets(text: str) -> int:
    return text.count("[") + text.count("{")


def _call_from_object(obj: Any, shallow: bool = False) -> ToolCall | ParseError | None:
    """Read one call object; None when ``obj`` is not shaped like a call at all. ``shallow``:
    the text it came from has too few brackets for arguments nested too deeply (arguments
    given as a JSON string are judged by their own brackets, which escapes may have hidden)."""
    if not isinstance(obj, dict):
        return None
    call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if "name" not in obj or ("arguments" not in obj and "parameters" not in obj):
        return None
    name = obj["name"]
    if not isinstance(name, str) or not name.strip():
        return ParseError("tool name must be a non-empty string", _json_snippet(obj))
    if len(name) > MAX_NAME_LENGTH:
        return ParseError(f"tool name is {len(name)} characters long; at most "
                          f"{MAX_NAME_LENGTH} allowed", _snippet(name))
    args = obj.get("arguments", obj.get("parameters"))
    if isinstance(args, str):
        shallow = _brackets(args) <= MAX_ARGUMENT_DEPTH
        try:
            args = loads(args) if args.strip() else {}
        except JSONError as exc:
            return ParseError(f"arguments of {name!r} are not valid JSON: {exc.msg}",
                              _snippet(args))
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ParseError(
            f"arguments of {name!r} must be a JSON object, got {type(args).__name__}",
            _json_snippet(args))
    too_deep = not shallow and depth(args) > MAX_ARGUMENT_DEPTH and [  # then find the key
        key for key, value in args.items() if depth(value) >= MAX_ARGUMENT_DEPTH]
    if too_deep:
        return ParseError(f"argument {too_deep[0]!r} of {name!r} is nested more than "
                          f"{MAX_ARGUMENT_DEPTH} levels deep", _snippet(name))
    return ToolCall(name.strip(), args, call_id)


def _calls_from_json(payload: str, *, strict: bool) -> list[ToolCall | ParseError] | None:
    """Parse a JSON payload into calls.

    Returns None when the payload is not a call (so the text may be a final answer). With
    ``strict`` (inside tags), anything that is not a call is an error.
    """
    try:
        data = loads(payload)
    except JSONError as exc:
        if strict or _LOOKS_LIKE_CALL.search(payload):
            return [ParseError(f"invalid JSON in tool call: {exc.msg}", _snippet(payload))]
        return None
    items = data if isinstance(data, list) else [data]
    shallow = _brackets(payload) <= MAX_ARGUMENT_DEPTH
    parsed = [_call_from_object(item, shallow) for item in items]
    if items and all(p is not None for p in parsed):
        return parsed  # type: ignore[return-value]
    if strict or (isinstance(data, list) and any(p is not None for p in parsed)):
        return [ParseError("expected {\"name\": ..., \"arguments\": {...}}", _snippet(payload))]
    return None


def parse_action(action: Any) -> ParsedAction:
    """Read the tool calls, parse errors and final-answer text in an action.

    Never raises: a non-string action is itself reported as a parse error.
    """
    if not isinstance(action, str):
        return ParsedAction(errors=[ParseError(
            f"an action must be a string, got {type(action).__name__}", _snippet(repr(action)))])
    found: list[ToolCall | ParseError] = []
    if "<tool_call>" in action:
        for match in _HERMES.finditer(action):
            if not match.group(0).endswith("</tool_call>"):
                found.append(ParseError("unclosed <tool_call> tag", _snippet(match.group(1))))
                continue
            found.extend(_calls_from_json(match.group(1).strip(), strict=True) or [])
        remainder = _HERMES.sub("", action)
    else:
        remainder = action
        if "```" in action:
            kept, position = [], 0
            for fence in fenced_blocks(action, json_languages=_CALL_FENCES, unclosed=True):
                if fence.language.lower() not in _CALL_FENCES:
                    continue
                calls = _calls_from_json(fence.body.strip(), strict=False)
                if calls is not None and not fence.closed:  # a call cut short is no answer
                    calls = [ParseError("unclosed ``` fence", _snippet(fence.body))]
                if calls is not None:
                    found.extend(calls)
                    kept.append(action[position:fence.start])
                    position = fence.end
            remainder = "".join(kept) + action[position:]
        stripped = action.strip()
        if not found and stripped[:1] in ("{", "["):
            calls = _calls_from_json(stripped, strict=False)
            if calls is not None:
                found.extend(calls)
                remainder = ""
    errors = [c for c in found if isinstance(c, ParseError)]
    if len(errors) > MAX_ERRORS:
        errors[MAX_ERRORS:] = [ParseError(
            f"{len(errors) - MAX_ERRORS} more parse errors in this action were not reported",
            "")]
    calls = [c for c in found if isinstance(c, ToolCall)] if errors else found
    return ParsedAction(calls, errors, remainder.strip())  # type: ignore[arg-type]


def format_tool_call(name: str, arguments: dict[str, Any], style: str = "json") -> str:
    """Write a call as an action string, in ``json`` or ``hermes`` style."""
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    if style == "hermes":
        return f"<tool_call>\n{payload}\n</tool_call>"
    if style != "json":
        raise ValueError(f"unknown tool-call style {style!r}; use 'json' or 'hermes'")
    return payload
