"""Failed model calls, counted against a budget by the commands whose result they decide.

An evaluation or training command keeps one :class:`FaultTally`: every batch of model calls is
added to it, and once more calls failed than ``max_faults`` allows, :meth:`FaultTally.add`
raises :class:`TooManyFaultsError` (the console script prints it as one line and exits 1).
When the command ends, :meth:`FaultTally.check` raises the same error if any call failed at all,
so that no table or mean reward is passed off as if every call had succeeded.
:class:`TalliedBackend` counts a backend's calls into a tally.

Example:
    >>> tally = FaultTally(max_faults=1, what="world-model calls")
    >>> tally.add(4, ["HTTP 422: top_k"])
    >>> tally.add(4, ["HTTP 422: top_k"])
    Traceback (most recent call last):
    ...
    agentworld_envs.backends.faults.TooManyFaultsError: 2 of 8 world-model calls failed \
(2x HTTP 422: top_k); stopped after more than 1 (--max-faults)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld_envs.backends.base import Backend, BackendError, first_error_or_completions
from agentworld_envs.protocol.chat import ChatRequest, Completion

__all__ = ["DEFAULT_MAX_FAULTS", "FaultTally", "TalliedBackend", "TooManyFaultsError"]

DEFAULT_MAX_FAULTS = 3
"""Failed model calls an evaluation or training command goes on after; one more stops it."""
_NUMBERED = re.compile(r"[\w-]*\d[\w-]*")
"""A number, or a word holding one: a request id, a UUID."""
_REASON_CHARS = 300
_MAX_REASONS = 100
"""Reasons a tally tells apart; a failure for any later one counts as :data:`_LATER_REASONS`,
so a run that fails for days keeps no text per failure."""
_LATER_REASONS = f"one of the reasons past the first {_MAX_REASONS}"


class TooManyFaultsError(BackendError):
    """Model calls that decide a command's result failed; the message counts them and says why."""


@dataclass
class FaultTally:
    """Model calls made and failed, with the reasons, against a budget.

    Args:
        max_faults: Failed calls tolerated before :meth:`add` raises; None or a negative
            number: never stop (the user asked to go on).
        what: What a call is, in messages (``"world-model calls"``).
        setting: The setting that sets ``max_faults``, named when the budget is spent: an
            env's ``max_faults`` keyword, a command's ``--max-faults`` flag (the default), or
            empty where no setting changes it.
    """

    max_faults: int | None = DEFAULT_MAX_FAULTS
    what: str = "model calls"
    setting: str = "--max-faults"
    calls: int = 0
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Failed calls by reason, reasons that differ only in their numbers (or in words holding
    digits, such as request ids) counted as one."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """Each counted reason's texts (its first one shown), by the same key as ``reasons``."""

    @property
    def bounded(self) -> bool:
        """Whether the budget is on (``max_faults`` is a number >= 0)."""
        return self.max_faults is not None and self.max_faults >= 0

    def add(self, calls: int, failures: Iterable[str] = ()) -> None:
        """Count ``calls`` calls, of which ``failures`` (one reason each) failed.

        Raises:
            TooManyFaultsError: when more calls failed than ``max_faults``.
        """
        failures = [str(reason)[:_REASON_CHARS] for reason in failures]
        self.calls += calls
        self.failed += len(failures)
        for reason in failures:  # "the prompt has 371 tokens..." and "...412..." are one
            key = _NUMBERED.sub("#", reason)
            if key not in self.reasons and len(self.reasons) >= _MAX_REASONS:
                key = reason = _LATER_REASONS
            self.reasons[key] += 1
            texts = self.examples.setdefault(key, [])
            if len(texts) < 2 and reason not in texts:
                texts.append(reason)
        if self.bounded and self.max_faults < self.failed:
            named = f" ({self.setting})" if self.setting else ""
            raise TooManyFaultsError(f"{self.summary()}; stopped after more than "
                                     f"{self.max_faults}{named}")

    def summary(self) -> str:
        """``N of M <what> failed (K x <commonest reason>)``."""
        if not self.failed:
            return f"0 of {self.calls} {self.what} failed"
        key, count = self.reasons.most_common(1)[0]
        texts = self.examples[key]
        reason = texts[0] + (", its numbers varying" if len(texts) > 1 else "")
        others = f"; {len(self.reasons) - 1} other reason(s)" if len(self.reasons) > 1 else ""
        return f"{self.failed} of {self.calls} {self.what} failed ({count}x {reason}{others})"

    def counts(self) -> dict[str, Any]:
        """What the tally has counted, as plain data (for a checkpoint); :meth:`restore` takes
        it back."""
        return {"calls": self.calls, "failed": self.failed, "reasons": dict(self.reasons),
                "examples": self.examples}

    def restore(self, counts: dict[str, Any]) -> None:
        """Take back :meth:`counts`, in place of what was counted so far."""
        self.calls, self.failed = counts["calls"], counts["failed"]
        self.reasons, self.examples = Counter(counts["reasons"]), dict(counts["examples"])

    def check(self, consequence: str = "") -> None:
        """Raise :class:`TooManyFaultsError` if any call failed; ``consequence`` says what that
        leaves (``"no table is printed"``)."""
        if self.failed:
            raise TooManyFaultsError(self.summary() + (f"; {consequence}" if consequence else ""))


class TalliedBackend(Backend):
    """A backend that adds every request it answers, and every one that failed, to ``tally``
    (which raises :class:`TooManyFaultsError` past its budget). It never closes ``inner``."""

    def __init__(self, inner: Backend, tally: FaultTally) -> None:
        self.inner, self.tally = inner, tally
        self.name, self.blocking = inner.name, inner.blocking
        self.cancels_each_call = inner.cancels_each_call

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        answers = self.inner.complete_each(requests)
        self.tally.add(len(requests), [str(a) for a in answers if isinstance(a, BackendError)])
        return answers

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def cancel(self) -> None:
        self.inner.cancel()
