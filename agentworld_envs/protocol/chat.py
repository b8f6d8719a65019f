"""What passes between an env and a model: chat requests, sampling settings, completions.

Plain data, shared by the simulated envs (which build requests and read completions) and the
backends (which answer them), so neither needs the other's modules. A missing completion is a
:class:`Fault`, never an exception.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agentworld_envs.protocol.integers import is_integer
from agentworld_envs.protocol.thinking import THINK_TAG, strip_thinking
from agentworld_envs.protocol.tool_calls import ToolCall, parse_action

__all__ = ["PLACEHOLDER_RAW", "ChatRequest", "Completion", "Fault", "MessageLog",
           "SamplingParams", "Usage", "messages_digest"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. Defaults are the deterministic settings used for evaluation."""

    temperature: float = 0.0
    top_p: float | None = 1.0
    """Nucleus sampling; None leaves it to the server (not sent; 1.0 in-process)."""
    top_k: int | None = None
    """Sample from the k likeliest tokens (0: from all); None leaves it to the server (not sent;
    all in-process)."""
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    """Extra API parameters, merged into the request payload (e.g. ``chat_template_kwargs``)."""

    def __post_init__(self) -> None:
        """Refuse settings no backend can honour, so none reaches one.

        Raises:
            ValueError: naming every bad setting.
        """
        bad = [message for wrong, message in (
            (not is_integer(self.max_tokens) or self.max_tokens < 1,
             f"max_tokens must be an integer >= 1, not {self.max_tokens!r}"),
            (not _number(self.temperature) or not 0 <= self.temperature < math.inf,
             f"temperature must be a finite number >= 0, not {self.temperature!r}"),
            (self.top_p is not None and (not _number(self.top_p) or not 0 < self.top_p <= 1),
             f"top_p must be a number in (0, 1] or None, not {self.top_p!r}"),
            (self.top_k is not None and (not is_integer(self.top_k) or self.top_k < 0),
             f"top_k must be an integer >= 0 (0: off) or None, not {self.top_k!r}"),
            (self.seed is not None and not is_integer(self.seed),
             f"seed must be an integer or None, not {self.seed!r}"),
            (not isinstance(self.stop, list | tuple)  # a str would stop at each character
             or not all(isinstance(s, str) for s in self.stop),
             f"stop must be a list of strings, not {self.stop!r}"),
        ) if wrong]
        if bad:
            raise ValueError("; ".join(bad))
        object.__setattr__(self, "stop", tuple(self.stop))

    def with_seed(self, seed: int | None) -> SamplingParams:
        """The same settings with another seed: ``dataclasses.replace`` without re-running
        ``__init__`` (an env asks for one per step)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__, seed=seed)
        return copy

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form (used in cache keys and run records)."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _canonical(message: Any) -> bytes:
    """One message as one line of canonical JSON."""
    return (json.dumps(message, sort_keys=True, separators=(",", ":"), default=str)
            + "\n").encode("ascii")


def messages_digest(messages: Iterable[Any]) -> str:
    """SHA-256 of the messages' canonical JSON, one line each."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(_canonical(message))
    return digest.hexdigest()


@dataclass(slots=True)
class ChatRequest:
    """One conversation to complete: OpenAI-format messages plus optional tool schemas."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    messages_digest: str | None = field(default=None, repr=False)
    """:func:`messages_digest` of ``messages``, when the builder kept it running
    (:class:`MessageLog`); :meth:`digest` computes it otherwise. It is trusted as given: a
    ``dataclasses.replace`` with other ``messages`` must pass ``messages_digest=None`` (a
    record cache would otherwise answer the new messages with the old ones' record)."""
    draft_hint: str | None = field(default=None, repr=False, compare=False)
    """A text the answer is likely to copy (a simulated env's real counterpart's observation):
    a backend that drafts greedy answers (``hf``) drafts from it too, which changes only its
    speed. Never sent to a server, recorded or part of the request's identity (:meth:`to_dict`,
    :meth:`digest`)."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready form."""
        return {"messages": self.messages, "tools": self.tools, "sampling": self.sampling.to_dict()}

    def digest(self) -> str:
        """:func:`messages_digest` of the messages, read from the builder where it kept one."""
        return self.messages_digest or messages_digest(self.messages)


class MessageLog:
    """A conversation that only grows, with its :func:`messages_digest` kept running.

    :meth:`request` extends the conversation by one message without re-reading it: the
    request's digest costs only that message, so a step late in a long episode costs what
    an early one does.

    Example:
        >>> log = MessageLog([{"role": "system", "content": "You simulate."}])
        >>> request = log.request({"role": "user", "content": "ls"})
        >>> request.digest() == messages_digest(request.messages), len(log.messages)
        (True, 1)
    """

    def __init__(self, messages: Iterable[dict[str, Any]] = ()) -> None:
        self.messages: list[dict[str, Any]] = []
        self._digest = hashlib.sha256()
        for message in messages:
            self.append(message)

    def __getstate__(self) -> dict[str, Any]:
        return {"messages": self.messages}  # a hash object cannot be pickled: it is redone

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["messages"])  # type: ignore[misc]

    def append(self, message: dict[str, Any]) -> None:
        """Add a message for good."""
        self.messages.append(message)
        self._digest.update(_canonical(message))

    def request(self, message: dict[str, Any], **options: Any) -> ChatRequest:
        """The conversation plus ``message`` (not added), as a request; ``options`` are the
        request's other fields (``tools``, ``sampling``)."""
        digest = self._digest.copy()
        digest.update(_canonical(message))
        return ChatRequest([*self.messages, message], messages_digest=digest.hexdigest(),
                           **options)


@dataclass(slots=True)
class Usage:
    """Token counts of one completion; None for a count its backend did not report (a server
    whose reply has no ``usage``), which is unknown, not zero."""

    input_tokens: int | None = 0
    output_tokens: int | None = 0

    @property
    def known(self) -> bool:
        """Whether both counts are known."""
        return self.input_tokens is not None and self.output_tokens is not None

    @property
    def total_tokens(self) -> int | None:
        """Input plus output tokens; None when either is unknown."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class Completion:
    """One model answer: its text, tool calls, usage, latency and finish reason."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    raw: dict[str, Any] | None = None
    """The provider's verbatim response, where there is one."""

    def to_action(self) -> str:
        """Render as an env action string.

        Calls read from the text (a text-format backend's, a callable agent's: the text, its
        reasoning removed, holds exactly these calls) are played as that text, so the env's
        parser also sees the calls that could not be read and logs them as malformed. Calls a
        server returned as structured ``tool_calls`` are played as JSON. With no call, the text,
        its reasoning removed where it has think tags: a call drafted only in the reasoning is
        not played.
        """
        if not self.tool_calls:
            return strip_thinking(self.text) if THINK_TAG.search(self.text) else self.text
        written = strip_thinking(self.text)
        if parse_action(written).calls == self.tool_calls:
            return written
        calls = [c.to_dict() for c in self.tool_calls]
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)


PLACEHOLDER_RAW = {"source": "placeholder"}
"""``Completion.raw`` of an answer that is a placeholder, not a model's (the scripted
backend's), so that an env can say ``observation_source: "placeholder"``."""


@dataclass(frozen=True)
class Fault:
    """Why a completion is missing: the backend failed, or did not answer in time."""

    kind: Literal["timeout", "backend_error"]
    message: str
