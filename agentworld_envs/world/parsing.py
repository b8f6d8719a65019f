"""Read a world model's raw output: drop the reasoning, keep the predicted observation.

The release's reading (Qwen-AgentWorld ``eval/lwm_eval_utils/output_parser.py``), exactly:

1. Reasoning goes (:mod:`agentworld_envs.protocol.thinking`), an orphan ``<think>`` up to the
   first ``<predicted_observation>`` after it, or to the end; the rest is stripped.
2. Empty raw output gives ``"No output"``. Otherwise the observation is the text after the LAST
   ``<predicted_observation>`` up to the next closing tag (or the end when unclosed), stripped:
   an empty block gives ``""``. With no tag it is the cleaned text, or ``"No output"`` if blank.
3. :func:`clean_response_marker` cuts a leading ``**Environment Observation:**`` (else every
   occurrence) and strips; the env applies it to the observation, as the release's judge does.

:func:`parse_world_model_output` returns that reading, with two robustness rules of ours that
are flagged whenever they change it: tags with inner whitespace (``<think >``,
``<predicted_observation >``) count as tags (``lenient_tag``), and a stray closing tag in
untagged output is dropped (``stray_close_tag``). Over-long observations are cut
(``over_long``). It never raises and runs in linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentworld_envs.protocol.thinking import remove_ranges, think_ranges

__all__ = [
    "NO_OUTPUT",
    "OBSERVATION_TAG",
    "RESPONSE_MARKER",
    "WorldModelOutput",
    "clean_response_marker",
    "last_tagged_block",
    "parse_model_output",
    "parse_world_model_output",
    "tagged_observation",
]

OBSERVATION_TAG = "predicted_observation"
RESPONSE_MARKER = "**Environment Observation:**"
NO_OUTPUT = "No output"
TRUNCATION_NOTE = "\n...[observation truncated]"


def tagged_observation(observation: str) -> str:
    """``observation`` in the ``<predicted_observation>`` block, as a world model trained on
    the release's format writes it.

    Example:
        >>> tagged_observation("ok")
        '<predicted_observation>\\nok\\n</predicted_observation>'
    """
    return f"<{OBSERVATION_TAG}>\n{observation}\n</{OBSERVATION_TAG}>"


@dataclass(frozen=True)
class _Tags:
    """The tag patterns of one reading: the release's exact tags, or ours with whitespace."""

    think: re.Pattern[str]
    open: re.Pattern[str]
    close: re.Pattern[str]

    @classmethod
    def of(cls, space: str) -> _Tags:
        return cls(re.compile(rf"<(/?)think{space}>", re.IGNORECASE),
                   re.compile(rf"<{OBSERVATION_TAG}{space}>", re.IGNORECASE),
                   re.compile(rf"</{OBSERVATION_TAG}{space}>", re.IGNORECASE))


_RELEASE = _Tags.of("")
_LENIENT = _Tags.of(r"\s*")


@dataclass(frozen=True, slots=True)
class WorldModelOutput:
    """The observation read from one world-model output, with what was wrong with it.

    Attributes:
        observation: The predicted observation, response marker cut (``""`` for an empty
            block; ``"No output"`` when nothing was produced).
        flags: From ``empty``, ``broken_think``, ``no_tag``, ``unclosed_tag``, ``no_output``
            (nothing usable), ``lenient_tag`` and ``stray_close_tag`` (our robustness changed
            the release's reading) and ``over_long`` (cut to the limit).
        release_observation: What the release's parser and marker cleaning give, exactly.
        diagnostics: Rule-computed counts: ``start_tags``, ``end_tags``, ``raw_chars`` and
            ``observation_chars``.
    """

    observation: str
    flags: tuple[str, ...] = ()
    release_observation: str = ""
    diagnostics: dict[str, int] = field(default_factory=dict)


def last_tagged_block(text: str, tag: str) -> tuple[str | None, bool]:
    """The text of the last ``<tag>`` block (exact tag, any case), and whether it was closed.

    Returns ``(None, False)`` when no opening tag exists; an unclosed block runs to the end.
    """
    return _last_block(text, re.compile(rf"<{re.escape(tag)}>", re.IGNORECASE),
                       re.compile(rf"</{re.escape(tag)}>", re.IGNORECASE))


def _last_block(text: str, open_tag: re.Pattern[str],
                close_tag: re.Pattern[str]) -> tuple[str | None, bool]:
    last = None
    for last in open_tag.finditer(text):  # noqa: B007 - the last match is wanted
        pass
    if last is None:
        return None, False
    close = close_tag.search(text, last.end())
    return text[last.end(): close.start() if close else len(text)], close is not None


def clean_response_marker(text: str) -> str:
    """Cut a leading ``**Environment Observation:**`` (else every occurrence); strip."""
    text = text.strip()
    if text.startswith(RESPONSE_MARKER):
        return text[len(RESPONSE_MARKER):].strip()
    return text.replace(RESPONSE_MARKER, "").strip()


@dataclass(frozen=True, slots=True)
class _Reading:
    text: str
    tagged: bool
    closed: bool
    broken_think: bool
    without_stray_close: str
    """``text`` with stray closing tags dropped (equal to it when the output is tagged)."""


def _read(text: str, tags: _Tags) -> _Reading:
    if not text:
        return _Reading(NO_OUTPUT, False, False, False, NO_OUTPUT)
    ranges, broken = think_ranges(text, tags.think, tags.open)
    cleaned = remove_ranges(text, ranges).strip()
    body, closed = _last_block(cleaned, tags.open, tags.close)
    if body is not None:
        return _Reading(body.strip(), True, closed, broken, body.strip())
    without = tags.close.sub("", cleaned).strip()
    return _Reading(cleaned or NO_OUTPUT, False, False, broken, without or NO_OUTPUT)


def parse_model_output(text: str) -> str:
    """The release's ``parse_model_output``, exactly (no marker cleaning).

    Example:
        >>> parse_model_output("<think>x</think><predicted_observation></predicted_observation>")
        ''
        >>> parse_model_output("")
        'No output'
    """
    return _read(text, _RELEASE).text


def parse_world_model_output(text: str, max_chars: int = 65536,
                             expect_tag: bool = True) -> WorldModelOutput:
    """Read the predicted observation from a world model's raw output.

    Args:
        text: The raw completion text.
        max_chars: Longest observation kept; longer ones are cut and flagged ``over_long``.
        expect_tag: Whether the prompt asked for a ``<predicted_observation>`` block (else an
            untagged output is not flagged ``no_tag``).

    Example:
        >>> out = parse_world_model_output(
        ...     "<think>a fake <predicted_observation>x</predicted_observation></think>"
        ...     "<predicted_observation>\\nreal\\n</predicted_observation>")
        >>> out.observation, out.flags
        ('real', ())
    """
    plain = _plain_reading(text)
    observation, flags, release = plain or _reading(text, expect_tag)
    if "no_output" not in flags and len(observation) > max_chars:
        flags.append("over_long")
        observation = observation[: max(0, max_chars - len(TRUNCATION_NOTE))] + TRUNCATION_NOTE
    diagnostics = {
        "start_tags": 1 if plain else len(_LENIENT.open.findall(text)),
        "end_tags": 1 if plain else len(_LENIENT.close.findall(text)),
        "raw_chars": len(text),
        "observation_chars": len(observation),
    }
    return WorldModelOutput(observation, tuple(flags), release, diagnostics)


_PLAIN_OPEN, _PLAIN_CLOSE = f"<{OBSERVATION_TAG}>", f"</{OBSERVATION_TAG}>"


def _plain_reading(text: str) -> tuple[str, list[str], str] | None:
    """The reading of the common output, one block and no other ``<`` (so no think tag and
    nothing lenient), without the general reading's passes; None for any other output."""
    stripped = text.strip()
    if (text.count("<") != 2 or not stripped.startswith(_PLAIN_OPEN)
            or not stripped.endswith(_PLAIN_CLOSE)):
        return None
    observation = clean_response_marker(stripped[len(_PLAIN_OPEN):-len(_PLAIN_CLOSE)])
    return observation, [], observation


def _reading(text: str, expect_tag: bool) -> tuple[str, list[str], str]:
    """The observation, the flags and the release's observation of any output."""
    release = clean_response_marker(parse_model_output(text))
    flags: list[str] = []
    if not text.strip():
        flags.append("empty")
    reading = _read(text, _LENIENT)
    observation = clean_response_marker(reading.without_stray_close)
    if reading.broken_think:
        flags.append("broken_think")
    if not reading.tagged and text.strip() and expect_tag:
        flags.append("no_tag")
    elif reading.tagged and not reading.closed:
        flags.append("unclosed_tag")
    if clean_response_marker(reading.text) != release:
        flags.append("lenient_tag")
    if reading.without_stray_close != reading.text:
        flags.append("stray_close_tag")
    if observation == NO_OUTPUT and not reading.tagged:
        flags.append("no_output")
    return observation, flags, release
