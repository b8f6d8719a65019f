"""A backend wrapper that shows progress and keeps the errors of the requests it failed."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion

__all__ = ["WatchedBackend"]


class WatchedBackend(Backend):
    """A backend that advances ``bar`` (a tqdm bar) by each request it answers and keeps the
    errors of the requests it failed."""

    def __init__(self, inner: Backend, bar: Any) -> None:
        self.inner, self.bar, self.name = inner, bar, inner.name
        self.errors: list[BackendError] = []
        self.requests = 0

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        answers = self.complete_each(requests)
        for answer in answers:
            if isinstance(answer, BackendError):
                raise answer
        return answers  # type: ignore[return-value]

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        answers = self.inner.complete_each(requests)
        self.requests += len(requests)
        self.errors += [a for a in answers if isinstance(a, BackendError)]
        self.bar.update(len(requests))
        return answers

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def report_failures(self, role: str) -> None:
        """Raise the first error when every request failed; else say on stderr how many did."""
        if not self.errors:
            return
        if len(self.errors) == self.requests:
            raise self.errors[0]
        print(f"warning: {len(self.errors)} of {self.requests} {role} requests failed "
              f"(first: {self.errors[0]})", file=sys.stderr)
