"""The judge-output parser of Qwen-AgentWorld's evaluation (``judge_parser.parse_judge_output``).

1. An empty reply fails. Reasoning is removed (an orphan ``<think>`` stops at
   ``<final_evaluation>``); the text read is the LAST ``<final_evaluation>`` block (to the end
   when unclosed), or the whole text.
2. The JSON is looked for in this order: the last fenced block (no tag or ``json``; it ends at
   backticks outside its JSON strings) that is ``{...}`` and contains ``"scores"``, else the
   last such block; else the last brace-matched object containing
   ``"scores"``, else the last object; else the object matched backward from the last ``}``.
3. It is decoded as is, then repaired (trailing commas dropped, ``'key':`` and bare keys
   quoted), then a ``"scores": {...}`` salvage is tried.
4. ``scores`` must be an object (flat scores fail). Each dimension: an ``int`` as is (``True`` is
   1); a ``float`` rounded half to even; a ``str`` as ``int(s.split("/")[0])`` ("4/5" is 4,
   "4.5" is 0); anything else, or missing, 0. Values above 0 are clamped to 1-5; 0 and negative
   values are kept.
5. The total is the mean of the dimensions above 0 (0 when none is): a missing dimension is
   left out, and an empty ``scores`` object is a success with total 0.

Decoding goes through :mod:`agentworld_envs.protocol.bounded_json` (linear time, bounded
numbers), so a score the release would read as a 400-digit integer or ``Infinity`` is a parse
failure here.

Example:
    >>> v = parse_judge_output('<think>hm</think><final_evaluation>```json\\n{"scores": '
    ...     '{"format": "4/5", "factuality": 6, "consistency": 2.5, "realism": 3,}}\\n```')
    >>> v.scores, v.total
    ({'format': 4, 'factuality': 5, 'consistency': 2, 'realism': 3, 'quality': 0}, 3.5)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentworld_envs.backends.redaction import map_strings
from agentworld_envs.backends.replies import replace_surrogates
from agentworld_envs.protocol import bounded_json
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.world.parsing import last_tagged_block

__all__ = ["DIMENSIONS", "JudgeParseError", "JudgeVerdict", "parse_judge_output"]

DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
JUDGE_TAG = "final_evaluation"
_JSON_FENCES = ("", "json")
"""Fences read for the verdict; each ends at backticks outside its JSON strings, so a note that
quotes a fence does not cut the verdict short."""

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SINGLE_QUOTED_KEY = re.compile(r"'([^'\n]*)'\s*:")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")
_SCORES_OBJECT = re.compile(r'"scores"\s*:\s*\{[^{}]*\}')


class JudgeParseError(ValueError):
    """The judge's output holds no readable verdict."""


@dataclass(frozen=True)
class JudgeVerdict:
    """One read verdict: the five integer scores (0 = not given), their total, the notes."""

    scores: dict[str, int]
    total: float
    strengths: list[Any] = field(default_factory=list)
    weaknesses: list[Any] = field(default_factory=list)


def _balanced(text: str) -> Iterator[tuple[int, int]]:
    """The spans of the top-level brace-matched ``{...}`` runs, left to right (one pass)."""
    depth, start = 0, -1
    for match in re.finditer(r"[{}]", text):
        if match.group() == "{":
            if depth == 0:
                start = match.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                yield start, match.end()


def _backward(text: str) -> str | None:
    """The object that ends at the last ``}``, matched backward."""
    end = text.rfind("}")
    depth = 0
    for position in range(end, -1, -1):
        char = text[position]
        if char == "}":
            depth += 1
        elif char == "{":
            depth -= 1
            if depth == 0:
                return text[position:end + 1]
    return None


def _last(candidates: list[str]) -> str | None:
    """The last candidate containing ``"scores"``, else the last one."""
    with_scores = [c for c in candidates if '"scores"' in c]
    return (with_scores or candidates or [None])[-1]


def _candidate(text: str) -> str | None:
    fences = bounded_json.fenced_blocks(text, json_languages=_JSON_FENCES)
    fenced = [f.body.strip() for f in fences if f.language.lower() in _JSON_FENCES]
    found = _last([b for b in fenced if b.startswith("{") and b.endswith("}")])
    if found is None:
        found = _last([text[a:b] for a, b in _balanced(text)])
    return found if found is not None else _backward(text)


def _decoded(candidate: str) -> Any:
    repaired = _TRAILING_COMMA.sub(r"\1", candidate)
    repaired = _BARE_KEY.sub(r'\1"\2":', _SINGLE_QUOTED_KEY.sub(r'"\1":', repaired))
    for attempt in (candidate, repaired):
        try:
            return bounded_json.loads(attempt)
        except bounded_json.JSONError:
            continue
    salvage = _SCORES_OBJECT.search(repaired)
    if salvage is not None:
        try:
            return bounded_json.loads("{" + salvage.group() + "}")
        except bounded_json.JSONError:
            pass
    raise JudgeParseError("judge output: no decodable JSON object")


def _dimension(value: Any) -> int:
    if isinstance(value, int):  # bool included: True is 1
        score = int(value)
    elif isinstance(value, float):
        score = int(round(value))  # round half to even, as Python rounds
    elif isinstance(value, str):
        try:
            score = int(value.split("/")[0])
        except ValueError:
            score = 0
    else:
        score = 0
    return min(max(score, 1), 5) if score > 0 else score


def _notes(value: Any) -> Any:
    """Strengths or weaknesses, a string as a list of one; a lone surrogate that an escape
    decoded to (``"\\ud800"``: no text, so no record could hold it) becomes U+FFFD."""
    value = map_strings(value, lambda text: replace_surrogates(text)[0])
    return [value] if isinstance(value, str) else value


def parse_judge_output(text: str) -> JudgeVerdict:
    """Read one judge reply with the release's tolerances (see the module docstring).

    Raises:
        JudgeParseError: for an empty reply, no decodable JSON, or no ``scores`` object.
    """
    if not text or not text.strip():
        raise JudgeParseError("judge output: empty")
    cleaned = strip_thinking(text, stop_tag=JUDGE_TAG)
    block = last_tagged_block(cleaned, JUDGE_TAG)[0]
    candidate = _candidate(cleaned if block is None else block)
    if candidate is None:
        raise JudgeParseError("judge output: no JSON object")
    data = _decoded(candidate)
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, dict):
        raise JudgeParseError("judge output: no scores object")
    read = {name: _dimension(scores.get(name)) for name in DIMENSIONS}
    given = [s for s in read.values() if s > 0]
    return JudgeVerdict(read, sum(given) / len(given) if given else 0.0,
                        _notes(data.get("strengths", [])), _notes(data.get("weaknesses", [])))
