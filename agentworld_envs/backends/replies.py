"""The one place a raw chat-completions reply becomes a :class:`Completion` or a
:class:`MalformedReplyError`.

Every string of the reply is cleaned first: a lone surrogate (valid JSON, ``"\\ud800"``, but not
encodable as UTF-8) becomes U+FFFD, and any credential is masked (see
:func:`~agentworld_envs.backends.redaction.redact`). The shape is then checked (``choices[0]``
and its ``message`` are objects, ``content`` is text, text parts or null, ``tool_calls`` a list or
null, usage counts finite non-negative integers), so a malformed reply is a reported fault, never
a crash later on. What was cleaned is said in ``raw["agentworld_repairs"]``. A usage count the
reply leaves out is unknown, not zero: :class:`Usage` holds None for it, and
``raw["agentworld_usage_unknown"]`` names it (read by :func:`unknown_usage`).

An error reply that refuses request fields the server does not support is read by
:func:`refused_fields`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from agentworld_envs.backends.base import BackendError
from agentworld_envs.backends.redaction import map_strings, redact
from agentworld_envs.protocol.chat import Completion, Usage
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.protocol.tool_calls import ToolCall, parse_action

__all__ = [
    "REPAIRS_KEY",
    "USAGE_UNKNOWN_KEY",
    "MalformedReplyError",
    "completion_from_reply",
    "mark_unknown",
    "refused_fields",
    "replace_surrogates",
    "text_tool_calls",
    "unknown_usage",
]

REPAIRS_KEY = "agentworld_repairs"
USAGE_UNKNOWN_KEY = "agentworld_usage_unknown"
"""Key of a completion's ``raw`` that lists the usage counts its reply left out."""
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
"""The reply's usage counts, in :class:`Usage`'s order (input, output)."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SNIPPET = 300
_REFUSAL = re.compile(
    r"unexpected (?:field|argument|key|param)|unrecogni[sz]ed (?:request )?(?:field|argument|"
    r"key|param)|unknown (?:field|argument|key|param)|extra_forbidden|extra (?:inputs|fields) "
    r"(?:are )?not permitted|unsupported (?:field|argument|param)|not supported",
    re.IGNORECASE)
_QUOTED = re.compile(r"""['"`]([A-Za-z_][A-Za-z0-9_]*)['"`]""")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MalformedReplyError(BackendError):
    """A server answered 200 with a reply that is not a usable chat completion."""


def refused_fields(reply: str, sent: Iterable[str]) -> frozenset[str]:
    """The fields of ``sent`` that an error ``reply`` refuses as unsupported.

    The reply must say that fields are not supported (``Unexpected fields``, ``Unrecognized
    request argument``, ``extra_forbidden``, ``not supported``...); the fields are those of
    ``sent`` it names in quotes, else those it names as words. Empty when it refuses none.

    Example:
        >>> reply = '{"detail": "Unexpected fields in the request: {`top_k`}"}'
        >>> sorted(refused_fields(reply, ["temperature", "top_k", "seed"]))
        ['top_k']
        >>> refused_fields('{"detail": "top_k must be at least 1"}', ["top_k"])
        frozenset()
    """
    if not _REFUSAL.search(reply):
        return frozenset()
    sent = set(sent)
    quoted = sent.intersection(_QUOTED.findall(reply))
    return frozenset(quoted or sent.intersection(_WORD.findall(reply)))


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate (which JSON can escape and UTF-8 cannot carry) as
    U+FFFD, and how many there were."""
    return _SURROGATE.subn("\ufffd", text)


def text_tool_calls(text: str) -> list[ToolCall]:
    """Tool calls written into plain text (Hermes tags, JSON), reasoning ignored.

    Calls that cannot be read are left out here, not lost: :meth:`Completion.to_action` plays
    a completion whose calls are these as its text, for the env's parser to report them.
    """
    return parse_action(strip_thinking(text)).calls


class _Scrubber:
    """Cleans strings (lone surrogates, secrets) and counts what it changed."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        self.secrets = [s for s in secrets if s]
        self.surrogates = 0
        self.redacted = 0

    def __call__(self, value: Any) -> Any:
        return map_strings(value, self._text)

    def _text(self, text: str) -> str:
        text, count = replace_surrogates(text)
        self.surrogates += count
        masked = redact(text, self.secrets)
        self.redacted += masked != text
        return masked

    def repairs(self) -> list[str]:
        notes = []
        if self.surrogates:
            notes.append(f"replaced {self.surrogates} lone surrogate(s) with U+FFFD")
        if self.redacted:
            notes.append(f"masked credentials in {self.redacted} string(s)")
        return notes


def _snippet(data: Any) -> str:
    return json.dumps(data, ensure_ascii=True, default=str)[:_SNIPPET]


def unknown_usage(completion: Completion) -> list[str]:
    """The usage counts (``prompt_tokens``, ``completion_tokens``) that ``completion``'s reply
    left out: unknown, so its :class:`Usage` holds None for them.

    Example:
        >>> unknown_usage(completion_from_reply({"choices": [{"message": {"content": "hi"}}]}, 0))
        ['prompt_tokens', 'completion_tokens']
    """
    raw = completion.raw
    return list(raw.get(USAGE_UNKNOWN_KEY, [])) if isinstance(raw, dict) else []


def mark_unknown(usage: Usage, unknown: Iterable[str]) -> Usage:
    """``usage`` with None for each count named in ``unknown`` (as :func:`unknown_usage`
    names them)."""
    unknown = set(unknown)
    counts = (usage.input_tokens, usage.output_tokens)
    return Usage(*(None if name in unknown else count
                   for name, count in zip(_USAGE_FIELDS, counts, strict=True)))


def _count(usage: dict[str, Any], field: str) -> int | None:
    """A usage count of the reply; None when it gives none."""
    value = usage.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedReplyError(f"usage.{field} is not a number: {_snippet(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise MalformedReplyError(f"usage.{field} is not a finite whole number: {value!r}")
    if value < 0:
        raise MalformedReplyError(f"usage.{field} is negative: {value!r}")
    return int(value)


def _message_text(content: Any) -> str:
    """Content as text; a list of content parts has its text parts joined."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content
    ):
        return "".join(p.get("text", "") for p in content)
    raise MalformedReplyError(f"message.content is neither text nor text parts: "
                              f"{_snippet(content)}")


def _native_calls(raw_calls: list[Any]) -> tuple[list[ToolCall], str | None]:
    """Read native ``tool_calls``.

    Returns:
        The calls, and None; or, when any call cannot be read, no calls and the raw calls as
        ``{"name", "arguments": "<raw>"}`` JSON text, so that parsing the action reports the error.
    """
    calls = []
    for item in raw_calls:
        item = item if isinstance(item, dict) else {}
        function = item.get("function") if isinstance(item.get("function"), dict) else item
        name = function.get("name")
        calls.append({
            "id": item.get("id"),
            "name": name if isinstance(name, str) else "",
            "arguments": function.get("arguments") or "",
        })
    text = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
    parsed = parse_action(text)
    if parsed.errors:
        bare = [{"name": c["name"], "arguments": c["arguments"]} for c in calls]
        return [], json.dumps(bare[0] if len(bare) == 1 else bare, ensure_ascii=False)
    return parsed.calls, None


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedReplyError(f"{what} is not an object: {_snippet(value)}")
    return value


def completion_from_reply(data: Any, latency_s: float, secrets: Iterable[str | None] = (),
                          repairs: Iterable[str] = ()) -> Completion:
    """Turn a decoded chat-completions reply into a clean :class:`Completion`.

    Args:
        data: The decoded JSON body.
        latency_s: How long the request took.
        secrets: Credential values to mask wherever they appear (a server may echo them).
        repairs: What decoding the body repaired already, said first in the repairs.

    Raises:
        MalformedReplyError: the reply's shape or usage counts are unusable.
    """
    scrub = _Scrubber(secrets)
    try:
        data = scrub(_object(data, "the reply"))
    except RecursionError:
        raise MalformedReplyError("the reply is nested too deeply") from None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReplyError(f"response has no choices: {_snippet(data)}")
    choice = _object(choices[0], "choices[0]")
    message = _object(choice.get("message"), "choices[0].message")
    text = _message_text(message.get("content"))
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise MalformedReplyError(f"message.tool_calls is not a list: {_snippet(raw_calls)}")
    if raw_calls:
        tool_calls, malformed = _native_calls(raw_calls)
        text = malformed if malformed is not None else text
    else:
        tool_calls = text_tool_calls(text)
    # Arguments decoded from JSON text may hold escapes that become surrogates or secrets.
    tool_calls = [ToolCall(scrub(c.name), scrub(c.arguments), scrub(c.call_id))
                  for c in tool_calls]
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise MalformedReplyError(f"finish_reason is not text: {_snippet(finish_reason)}")
    usage = data.get("usage")
    usage = {} if usage is None else _object(usage, "usage")
    counts = [_count(usage, name) for name in _USAGE_FIELDS]
    unknown = [name for name, count in zip(_USAGE_FIELDS, counts, strict=True) if count is None]
    text = scrub(text)
    repairs = [*repairs, *scrub.repairs()]
    notes = {**({REPAIRS_KEY: repairs} if repairs else {}),
             **({USAGE_UNKNOWN_KEY: unknown} if unknown else {})}
    return Completion(
        text=text,
        tool_calls=tool_calls,
        finish_reason=finish_reason or "stop",
        usage=Usage(*counts),
        latency_s=latency_s,
        raw={**data, **notes} if notes else data,
    )
