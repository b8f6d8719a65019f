"""JSON decoding of untrusted text with bounded nesting and numbers, in linear time.

:func:`loads` and :func:`raw_decode` behave like :mod:`json`'s, except that a value nested more
than :data:`MAX_DEPTH` levels deep, an integer of more than :data:`MAX_INT_DIGITS` digits, or a
number that is not finite (``NaN``, ``Infinity``, ``1e999``) is a :class:`JSONError`
instead of a ``RecursionError``, ``ValueError`` or ``OverflowError`` later on. Every decoded
number therefore converts to a finite ``float``.

:func:`find_objects` finds the JSON objects inside free text in one left-to-right pass.
:func:`fenced_blocks` and :func:`unfence` read Markdown code fences, also in linear time.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from agentworld_envs.errors import FieldedError

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "Fence", "JSONError", "depth", "fenced_blocks",
           "find_objects", "is_bounded", "loads", "raw_decode", "unfence"]

MAX_DEPTH = 200
"""Deepest nesting of arrays and objects accepted."""
MAX_INT_DIGITS = 300
"""Longest integer accepted, in digits: it still converts to a finite float."""
_INT_LIMIT = 10 ** MAX_INT_DIGITS
_OUT_OF_BOUNDS = MAX_DEPTH + 1
"""The height :func:`_sound_parts` gives a value out of bounds."""
_WINDOW = 256
_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
_BAD_NUMBER = f"a number is not finite or has more than {MAX_INT_DIGITS} digits"
_OBJECT_START = re.compile(r'\{(?=\s*["}])')
_LOOKAHEAD = 16  # the decoder reads at most this far past an error (``-Infinity``, ``\\uXXXX``)
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
# A fence's opening line after its backticks (``\r\n`` too); unambiguous, so a failed match is
# linear.
_FENCE_HEADER = re.compile(r"[ \t]*(?:([\w-]+)[ \t]*)?\r?\n")
# In a JSON fence: a string (it never spans a line, so an unterminated one stops at the line's
# end and each character is read once) or a closing fence outside one.
_JSON_FENCE_TOKEN = re.compile(r'"(?:[^"\\\n]|\\[^\n])*"?|```')


def _number_problem(item: Any) -> bool:
    if isinstance(item, int):
        return not -_INT_LIMIT < item < _INT_LIMIT
    if isinstance(item, complex):
        return not (math.isfinite(item.real) and math.isfinite(item.imag))
    return isinstance(item, float) and not math.isfinite(item)


class _Suspects(threading.local):
    """Whether the decoding under way (in this thread) met a number out of bounds."""

    seen = False


_SUSPECTS = _Suspects()


def _out_of_bounds() -> float:
    _SUSPECTS.seen = True
    return math.inf  # a stand-in that :func:`_problem` reports


def _parse_int(digits: str) -> int | float:
    return (int(digits) if len(digits) - digits.startswith("-") <= MAX_INT_DIGITS
            else _out_of_bounds())


def _parse_float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _out_of_bounds()


def _parse_constant(name: str) -> float:
    return _out_of_bounds()


def _bounded_decoder(object_hook: Any = None) -> json.JSONDecoder:
    """A decoder whose number hooks flag, in :data:`_SUSPECTS`, a number out of bounds."""
    return json.JSONDecoder(object_hook=object_hook, parse_int=_parse_int,
                            parse_float=_parse_float, parse_constant=_parse_constant)


def _collecting_decoder(completed: list[dict[str, Any]]) -> json.JSONDecoder:
    """A decoder that also appends every object it completes to ``completed``."""
    def hook(obj: dict[str, Any]) -> dict[str, Any]:
        completed.append(obj)
        return obj
    return _bounded_decoder(hook)


_DECODER = _bounded_decoder()
_NO_PARTS: list[dict[str, Any]] = []
"""The ``completed`` list of :data:`_DECODER`, which has no hook that fills it."""


def _problem(value: Any) -> str | None:
    """What puts a value out of bounds, without recursion; None when it is in bounds."""
    level, deep = [value], 0
    while level:
        if any(map(_number_problem, level)):
            return _BAD_NUMBER
        level = [v for item in level if isinstance(item, dict | list | tuple | set | frozenset)
                 for v in ([*item, *item.values()] if isinstance(item, dict) else item)]
        deep += bool(level)
        if deep > MAX_DEPTH:
            return _TOO_DEEP
    return None


_CONTAINERS = (dict, list, tuple, set)


def depth(value: Any) -> int:
    """Nesting depth of a JSON-like value (0 for a scalar), without recursion."""
    level, deep = [value], 0
    while True:
        level = [v for item in level if isinstance(item, _CONTAINERS)
                 for v in (item.values() if isinstance(item, dict) else item)]
        if not level:
            return deep
        deep += 1


def is_bounded(value: Any) -> bool:
    """Whether a value (say from :func:`ast.literal_eval`) keeps to this module's bounds.

    Example:
        >>> is_bounded({"a": [1, 2.5]}), is_bounded(0x1 << 4000), is_bounded([float("nan")])
        (True, False, False)
    """
    return _problem(value) is None


def _value_end(text: str, start: int) -> int:
    """Where the brackets opened at ``start`` balance again (the text's end if never)."""
    level = 0
    for match in _STRUCTURE.finditer(text, start):
        token = match.group()
        if token in "[{":
            level += 1
        elif token in "]}":
            level -= 1
            if level <= 0:
                return match.end()
    return len(text)


class JSONError(FieldedError, ValueError):
    """Text that holds no JSON value in bounds at the place asked.

    Unlike :class:`json.JSONDecodeError` it does not count lines (a cost proportional to the
    position), so that trying many places in one text stays linear.
    """

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(f"{msg} (char {pos})")
        self.msg, self.pos = msg, pos


def _decode_once(decoder: json.JSONDecoder, text: str, index: int,
                 completed: list[dict[str, Any]]) -> tuple[Any, int]:
    """Decode at ``index`` from growing windows of the text, so that a failure costs only the
    text it read and error positions stay small. The decoder reads at most a few characters
    past an error, except in an unterminated string: only such an error, or one at the edge of
    the window, could come from the cut and calls for a wider window."""
    size = _WINDOW
    while True:
        window = text[index:index + size]
        whole = index + size >= len(text)
        completed.clear()
        try:
            value, end = decoder.scan_once(window, 0)
            if whole or end < len(window):
                return value, index + end
            continue
        except StopIteration as stop:  # the C scanner's "Expecting value", at any depth
            msg, pos = "Expecting value", stop.value
        except json.JSONDecodeError as exc:
            msg, pos = exc.msg, exc.pos
        finally:
            size *= 4
        if whole or (pos < len(window) - _LOOKAHEAD and not msg.startswith("Unterminated")):
            raise JSONError(msg, index + pos)


def _decode(decoder: json.JSONDecoder, text: str, index: int,
            completed: list[dict[str, Any]]) -> tuple[Any, int]:
    _SUSPECTS.seen = False
    try:
        value, end = _decode_once(decoder, text, index, completed)
    except RecursionError:
        raise JSONError(_TOO_DEEP, _value_end(text, index)) from None
    # The walk is needed only where a hook flagged a number, or where the value has enough
    # brackets to nest too deeply; either way it decides.
    brackets = text.count("[", index, end) + text.count("{", index, end)
    suspect = _SUSPECTS.seen or brackets > MAX_DEPTH
    problem = _problem(value) if suspect else None
    if problem is not None:
        raise JSONError(problem, end)
    return value, end


def raw_decode(text: str, index: int = 0) -> tuple[Any, int]:
    """Decode the JSON value starting exactly at ``text[index]``; return it and where it ends.

    Raises:
        JSONError: when no value in bounds starts there.
    """
    return _decode(_DECODER, text, index, _NO_PARTS)


def loads(text: str) -> Any:
    """Decode a whole JSON document (surrounding whitespace allowed), within bounds.

    Example:
        >>> loads('{"a": [1, 2.5]}')
        {'a': [1, 2.5]}
        >>> loads("[" * 300 + "]" * 300)
        Traceback (most recent call last):
        ...
        agentworld_envs.protocol.bounded_json.JSONError: nested more than 200 levels deep (char 600)

    Raises:
        JSONError: when the text is not one JSON value in bounds.
    """
    start = len(text) - len(text.lstrip())
    value, end = raw_decode(text, start)
    if text[end:].strip():
        raise JSONError("Extra data", end)
    return value


def _sound_parts(completed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects of ``completed`` (in closing order) that are in bounds and not held inside
    another such object. One pass: an object closes after every object it holds, so its depth
    (above :data:`MAX_DEPTH` when out of bounds) comes from theirs, read once."""
    height: dict[int, int] = {}
    inner: set[int] = set()
    for obj in completed:
        deep, held, stack = 0, [], [(value, 1) for value in obj.values()]
        while stack and deep <= MAX_DEPTH:
            item, level = stack.pop()
            if isinstance(item, dict):
                deep = max(deep, level + height[id(item)])
                held.append(id(item))
                continue
            deep = max(deep, _OUT_OF_BOUNDS if _number_problem(item) else level)
            if isinstance(item, list):
                stack.extend((value, level + 1) for value in item)
        height[id(obj)] = deep
        if deep <= MAX_DEPTH:
            inner.update(held)
    return [obj for obj in completed if height[id(obj)] <= MAX_DEPTH and id(obj) not in inner]


def find_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in free text, in order, in linear time.

    A place is tried only where an object can start (``{`` then ``"`` or ``}``). A value that
    fails to decode yields the objects in bounds that completed inside it, and the search
    resumes where it failed: text that the failed value read as a JSON string is not searched
    again. A value nested too deeply is skipped whole.

    Example:
        >>> list(find_objects('say {"a": 1} and {"b": {"c": 2}, oops {"d": 1e999, "e": {"f": 3}}'))
        [{'a': 1}, {'c': 2}, {'f': 3}]
    """
    completed: list[dict[str, Any]] = []
    decoder = _collecting_decoder(completed)
    start = _OBJECT_START.search(text)
    while start:
        try:
            value, end = _decode(decoder, text, start.start(), completed)
        except JSONError as exc:
            if exc.msg != _TOO_DEEP:
                yield from _sound_parts(completed)
            end = max(exc.pos, start.start() + 1)
        else:
            yield value
        start = _OBJECT_START.search(text, end)


@dataclass(frozen=True)
class Fence:
    """One fenced code block: its span in the text, its language tag and its body."""

    start: int
    end: int
    language: str
    body: str
    closed: bool = True


def fenced_blocks(text: str, json_languages: Collection[str] = (),
                  unclosed: bool = False) -> Iterator[Fence]:
    """The fenced blocks of a text: three backticks, an optional language tag and a newline,
    up to the next three backticks; in a fence whose lower-cased tag is in ``json_languages``,
    the next three backticks outside a JSON string (a call may write a Markdown fence into an
    argument), else the next three. With ``unclosed``, a last fence left open runs to the end
    of the text (``closed`` False). Linear time: each character is read a bounded number of
    times (a JSON string cannot span lines, so scans that found no end would agree on every
    later line and are not repeated).

    Example:
        >>> [(f.language, f.body) for f in fenced_blocks("a\\n```json\\n{}\\n```\\nb")]
        [('json', '{}\\n')]
        >>> [f.body for f in fenced_blocks('```json\\n"```"\\n```', json_languages={"json"})]
        ['"```"\\n']
    """
    opening, scan_ends = text.find("```"), True
    while opening != -1:
        header = _FENCE_HEADER.match(text, opening + 3)
        if header is None:
            opening = text.find("```", opening + 1)
            continue
        language, close = header.group(1) or "", -1
        if scan_ends and language.lower() in json_languages:
            close = next((t.start() for t in _JSON_FENCE_TOKEN.finditer(text, header.end())
                          if t.group() == "```"), -1)
            scan_ends = close != -1
        if close == -1:
            close = text.find("```", header.end())
        if close == -1:
            if unclosed:
                yield Fence(opening, len(text), language, text[header.end():], closed=False)
            return
        yield Fence(opening, close + 3, language, text[header.end():close])
        opening = text.find("```", close + 3)


def unfence(text: str) -> str:
    """The inside of a text that is one fenced code block; any other text unchanged.

    Example:
        >>> unfence("```bash\\nls -la\\n```")
        'ls -la'
        >>> unfence("ls -la")
        'ls -la'
    """
    stripped = text.strip()
    if not stripped.startswith("```"):
        return text
    header, close = _FENCE_HEADER.match(stripped, 3), stripped.rfind("```")
    if header is None or close < header.end():
        return text
    body = stripped[header.end():close]
    return body.removesuffix("\n").removesuffix("\r")
