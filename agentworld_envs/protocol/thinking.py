"""Reasoning in a model's text: ``<think>`` blocks found and removed as Qwen-AgentWorld's
release does (``eval/lwm_eval_utils/output_parser.py``), for world models, judges and agents.

Tags are ``<think>`` / ``</think>``, any case. Each ``<think>`` is paired with the next free
``</think>`` and the range removed; an orphan ``</think>`` removes everything from the start
through the tag; an orphan ``<think>`` removes up to the first stop tag after it (a world
model's ``<predicted_observation>``, a judge's ``<final_evaluation>``), or to the end. The
ranges are merged. Linear time in the text.

Example:
    >>> strip_thinking("<think>plan</think> ls output")
    'ls output'
    >>> strip_thinking("half a thought</think>the screen")
    'the screen'
    >>> strip_thinking("<think>never closed<answer>42", stop_tag="answer")
    '<answer>42'
"""

from __future__ import annotations

import bisect
import re
from collections import deque

__all__ = ["THINK_TAG", "remove_ranges", "strip_thinking", "think_ranges"]

THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
"""The release's reasoning tags; group 1 is ``/`` on a closing tag."""


def think_ranges(text: str, think: re.Pattern[str] = THINK_TAG,
                 stop: re.Pattern[str] | None = None) -> tuple[list[tuple[int, int]], bool]:
    """Merged ``(start, end)`` ranges of reasoning to remove, and whether any tag was an orphan.

    ``think`` matches both tags (group 1 non-empty on a closing one); an orphan opening tag
    runs to the first ``stop`` match after it, or to the end.
    """
    ranges: list[tuple[int, int]] = []
    pending: deque[int] = deque()  # each open takes the next free close: first come, first paired
    orphans = False
    for match in think.finditer(text):
        if not match.group(1):
            pending.append(match.start())
        elif pending:
            ranges.append((pending.popleft(), match.end()))
        else:
            ranges.append((0, match.end()))
            orphans = True
    if pending:
        stops = [m.start() for m in stop.finditer(text, pending[0])] if stop else []
        for start in pending:
            following = bisect.bisect_left(stops, start)
            ranges.append((start, stops[following] if following < len(stops) else len(text)))
    return _merge(ranges), bool(pending) or orphans


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def remove_ranges(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` without the sorted, disjoint ``ranges``."""
    kept, position = [], 0
    for start, end in ranges:
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return "".join(kept)


def strip_thinking(text: str, stop_tag: str | None = None) -> str:
    """``text`` without its reasoning, stripped; an unclosed ``<think>`` runs to the first
    ``<stop_tag>`` after it, or to the end when there is none (or no ``stop_tag``)."""
    stop = re.compile(rf"<{re.escape(stop_tag)}>", re.IGNORECASE) if stop_tag else None
    return remove_ranges(text, think_ranges(text, THINK_TAG, stop)[0]).strip()
