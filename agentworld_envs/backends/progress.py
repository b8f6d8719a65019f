"""Progress bars on stderr, and a backend wrapper that advances one and counts the requests it
failed against a budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.faults import FaultTally, TalliedBackend

__all__ = ["WatchedBackend", "progress_bar"]


def progress_bar(total: int | None, desc: str, unit: str, *, show: bool = True) -> tqdm:
    """A command's progress bar on stderr, drawn whether or not stderr is a terminal (a log
    gets its updates too); hidden when not ``show`` (``--no-progress``)."""
    return tqdm(total=total, desc=desc, unit=unit, disable=not show)


class WatchedBackend(TalliedBackend):
    """A backend that advances ``bar`` (a tqdm bar) by each request it answers and counts the
    failed ones in ``tally`` (default: one that never stops the run)."""

    def __init__(self, inner: Backend, bar: Any, tally: FaultTally | None = None) -> None:
        super().__init__(inner, tally or FaultTally(None))
        self.bar = bar

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        try:
            return super().complete_each(requests)
        finally:
            self.bar.update(len(requests))
