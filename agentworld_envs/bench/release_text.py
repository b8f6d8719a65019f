"""The release's text handling on the bench path: reasoning removal, the prediction, the marker.

These follow Qwen-AgentWorld's ``eval/lwm_eval_utils/output_parser.py`` exactly (see
``docs/world_model.md``, bench part), which differs from the env's own reader
(:func:`agentworld_envs.sim.parsing.parse_world_model_output`) on purpose-built corner cases:

* tags are matched exactly (``<think>``, ``<predicted_observation>``; any case, no spaces);
* each ``<think>`` pairs with the next free ``</think>``; an orphan ``</think>`` removes the text
  from the start through it; an orphan ``<think>`` removes the text up to the next stop tag
  (``<predicted_observation>`` for a prediction, ``<final_evaluation>`` for a verdict) or the end;
* an empty tag block is an empty prediction (``""``), which is judged; only an empty output is
  ``"No output"``.

Example:
    >>> parse_model_output("<think>x</think><predicted_observation></predicted_observation>")
    ''
    >>> cut_response_marker("**Environment Observation:**\\n  ok \\n")
    'ok'
"""

from __future__ import annotations

import bisect
import re

__all__ = ["NO_OUTPUT", "RESPONSE_MARKER", "cut_response_marker", "last_block",
           "parse_model_output", "remove_thinking"]

NO_OUTPUT = "No output"
RESPONSE_MARKER = "**Environment Observation:**"
_THINK = re.compile(r"<(/?)think>", re.IGNORECASE)


def _tag(name: str, closing: bool = False) -> re.Pattern[str]:
    return re.compile(rf"<{'/' if closing else ''}{re.escape(name)}>", re.IGNORECASE)


def remove_thinking(text: str, stop_tag: str = "predicted_observation") -> str:
    """The text without its reasoning (see the module docstring), stripped."""
    ranges: list[tuple[int, int]] = []
    pending: list[int] = []  # unpaired <think> starts, oldest first
    paired = 0
    for match in _THINK.finditer(text):
        if not match.group(1):
            pending.append(match.start())
        elif paired < len(pending):
            ranges.append((pending[paired], match.end()))
            paired += 1
        else:
            ranges.append((0, match.end()))
    orphans = pending[paired:]
    if orphans:
        stops = [m.start() for m in _tag(stop_tag).finditer(text, orphans[0])]
        for start in orphans:
            following = bisect.bisect_left(stops, start)
            ranges.append((start, stops[following] if following < len(stops) else len(text)))
    kept, position = [], 0
    for start, end in sorted(ranges):
        if end > position:
            kept.append(text[position:max(position, start)])
            position = end
    kept.append(text[position:])
    return "".join(kept).strip()


def last_block(text: str, tag: str) -> str | None:
    """The text after the last ``<tag>`` up to the next ``</tag>`` (or the end); None without
    an opening tag."""
    opening = None
    for opening in _tag(tag).finditer(text):
        pass
    if opening is None:
        return None
    closing = _tag(tag, closing=True).search(text, opening.end())
    return text[opening.end():closing.start() if closing else len(text)]


def parse_model_output(raw: str) -> str:
    """The predicted observation the release judges, from a raw world-model output."""
    if not raw:
        return NO_OUTPUT
    cleaned = remove_thinking(raw)
    block = last_block(cleaned, "predicted_observation")
    if block is not None:
        return block.strip()
    return cleaned or NO_OUTPUT


def cut_response_marker(text: str) -> str:
    """A leading ``**Environment Observation:**`` cut (else every occurrence removed), stripped."""
    text = text.strip()
    if text.startswith(RESPONSE_MARKER):
        return text[len(RESPONSE_MARKER):].strip()
    return text.replace(RESPONSE_MARKER, "").strip()
