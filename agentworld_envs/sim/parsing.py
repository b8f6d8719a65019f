"""Read a world model's raw output: drop the reasoning, keep the predicted observation.

The rules follow the AgentWorld output parser:

1. Reasoning is removed robustly (case-insensitive, nested and repeated blocks merged): a
   paired ``<think>...</think>`` block goes; an orphan ``</think>`` removes everything from the
   start through the tag; an orphan ``<think>`` removes text up to the next
   ``<predicted_observation>`` tag, or to the end.
2. The observation is the LAST ``<predicted_observation>`` block: the text between the last
   opening tag and the next closing tag, or everything after it when it is unclosed. This
   defeats fake tags written while reasoning.
3. With no tag the cleaned text is the observation; empty output becomes ``"No output"``.

Whatever the input, :func:`parse_world_model_output` returns an observation and says in
``flags`` what was wrong with the output.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = [
    "NO_OUTPUT",
    "OBSERVATION_TAG",
    "RESPONSE_MARKER",
    "WorldModelOutput",
    "clean_response_marker",
    "last_tagged_block",
    "parse_world_model_output",
    "strip_thinking",
]

OBSERVATION_TAG = "predicted_observation"
RESPONSE_MARKER = "**Environment Observation:**"
NO_OUTPUT = "No output"
TRUNCATION_NOTE = "\n...[observation truncated]"

_THINK = re.compile(r"<(/?)think\s*>", re.IGNORECASE)
_OPEN = re.compile(rf"<{OBSERVATION_TAG}\s*>", re.IGNORECASE)
_CLOSE = re.compile(rf"</{OBSERVATION_TAG}\s*>", re.IGNORECASE)
_MARKER = re.compile(r"^\s*" + re.escape(RESPONSE_MARKER) + r"[ \t]*\n?")


@dataclass(frozen=True)
class WorldModelOutput:
    """The observation read from one world-model output, with what was wrong with it.

    Attributes:
        observation: The predicted observation (never empty: ``"No output"`` at worst).
        flags: Problems found, from ``empty``, ``broken_think``, ``no_tag``, ``unclosed_tag``,
            ``no_output`` and ``over_long``.
        diagnostics: Rule-computed counts: ``start_tags``, ``end_tags``, ``raw_chars`` and
            ``observation_chars``.
    """

    observation: str
    flags: tuple[str, ...] = ()
    diagnostics: dict[str, int] = field(default_factory=dict)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _think_ranges(text: str) -> tuple[list[tuple[int, int]], bool]:
    """Ranges of reasoning to remove, and whether any think tag was unbalanced."""
    ranges: list[tuple[int, int]] = []
    opened: list[int] = []
    broken = False
    for match in _THINK.finditer(text):
        if not match.group(1):
            opened.append(match.start())
        elif opened:
            ranges.append((opened.pop(), match.end()))
        else:
            ranges.append((0, match.end()))
            broken = True
    if opened:
        broken = True
        tags = [m.start() for m in _OPEN.finditer(text, opened[0])]
        for start in opened:  # each runs to the first observation tag after it, or the end
            following = bisect.bisect_left(tags, start)
            ranges.append((start, tags[following] if following < len(tags) else len(text)))
    return _merge(ranges), broken


def strip_thinking(text: str) -> str:
    """Remove every reasoning block from ``text``, even when its tags are broken.

    Example:
        >>> strip_thinking("<think>plan</think>ls output")
        'ls output'
        >>> strip_thinking("half a thought</think>the screen")
        'the screen'
    """
    ranges, _ = _think_ranges(text)
    return _remove(text, ranges)


def _remove(text: str, ranges: list[tuple[int, int]]) -> str:
    kept, position = [], 0
    for start, end in ranges:
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)


def last_tagged_block(text: str, tag: str) -> tuple[str | None, bool]:
    """The text of the last ``<tag>`` block, and whether it was closed.

    Returns ``(None, False)`` when no opening tag exists; an unclosed block runs to the end.
    """
    opens = list(re.finditer(rf"<{tag}\s*>", text, re.IGNORECASE))
    if not opens:
        return None, False
    start = opens[-1].end()
    close = re.compile(rf"</{tag}\s*>", re.IGNORECASE).search(text, start)
    return text[start : close.start() if close else len(text)], close is not None


def clean_response_marker(text: str) -> str:
    """Drop a leading ``**Environment Observation:**`` marker."""
    return _MARKER.sub("", text, count=1)


def parse_world_model_output(text: str, max_chars: int = 65536) -> WorldModelOutput:
    """Read the predicted observation from a world model's raw output.

    Args:
        text: The raw completion text.
        max_chars: Longest observation kept; longer ones are cut and flagged ``over_long``.

    Example:
        >>> out = parse_world_model_output(
        ...     "<think>a fake <predicted_observation>x</predicted_observation></think>"
        ...     "<predicted_observation>\\nreal\\n</predicted_observation>")
        >>> out.observation, out.flags
        ('real', ())
    """
    flags: list[str] = []
    if not text.strip():
        flags.append("empty")
    ranges, broken = _think_ranges(text)
    if broken:
        flags.append("broken_think")
    cleaned = _remove(text, ranges)
    body, closed = last_tagged_block(cleaned, OBSERVATION_TAG)
    if body is None:
        if text.strip():
            flags.append("no_tag")
        body = _CLOSE.sub("", cleaned)
    elif not closed:
        flags.append("unclosed_tag")
    observation = clean_response_marker(body.strip("\n")).strip("\n").rstrip()
    if not observation.strip():
        flags.append("no_output")
        observation = NO_OUTPUT
    elif len(observation) > max_chars:
        flags.append("over_long")
        observation = observation[: max(0, max_chars - len(TRUNCATION_NOTE))] + TRUNCATION_NOTE
    diagnostics = {
        "start_tags": len(_OPEN.findall(text)),
        "end_tags": len(_CLOSE.findall(text)),
        "raw_chars": len(text),
        "observation_chars": len(observation),
    }
    return WorldModelOutput(observation, tuple(flags), diagnostics)
