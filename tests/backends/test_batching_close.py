"""BatchingBackend.close() answers every caller at once, sent or not, and every later call."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.batching import BatchingBackend
from agentworld_envs.backends.scripted import ScriptedBackend

GUARD_S = 60.0
"""Only a caller that close() left waiting waits this long."""

LONG_WINDOW = 600.0


class Stalled(Backend):
    """A server that answers only when told to (``release``), and has no close() (as the
    ``openai`` backend): it stops a call only through cancel()."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.cancels = 0

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.entered.set()
        self.release.wait(GUARD_S)
        return [Completion("late answer") for _ in requests]

    def cancel(self) -> None:
        self.cancels += 1


def _request(text: str) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}])


def test_close_fails_the_callers_of_the_batch_in_flight_and_cancels_it() -> None:
    inner = Stalled()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    shared.join()
    shared.join()  # the two calls leave as one batch
    outcomes: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            outcomes[i] = shared.complete([_request(str(i))])
        except BackendError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    assert inner.entered.wait(GUARD_S)
    try:
        shared.close()
        for thread in threads:
            thread.join(GUARD_S)
        released = not inner.release.is_set()  # answered by close(), not by the server
    finally:
        inner.release.set()
    assert released and not any(thread.is_alive() for thread in threads)
    assert [str(outcomes[i]) for i in range(2)] == ["the batching backend was closed"] * 2
    assert inner.cancels == 1  # nobody waits for the batch: the server may stop


def test_a_closed_backend_that_never_blocks_refuses_later_calls() -> None:
    shared = BatchingBackend(ScriptedBackend())
    assert not shared.blocking
    shared.close()
    with pytest.raises(BackendError, match="closed"):
        shared.complete([_request("late")])
