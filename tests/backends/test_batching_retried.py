"""cancel() and close() reach the callers of a failed batch that waits to be sent again one
caller at a time: none of them is sent after."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.batching import BatchingBackend
from agentworld_envs.backends.cancelling import CallCancelled

GUARD_S = 60.0
"""Only a caller left waiting waits this long."""

LONG_WINDOW = 600.0
CALLERS = 4


class MergedFails(Backend):
    """Fails every call of several requests; holds a call of one until ``release``."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.alone, self.release = threading.Event(), threading.Event()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        texts = [request.messages[-1]["content"] for request in requests]
        self.calls.append(texts)
        if len(texts) > 1:
            raise RuntimeError("the merged call failed")
        self.alone.set()
        self.release.wait(GUARD_S)
        return [Completion(text) for text in texts]


@pytest.mark.parametrize("stop", ["cancel", "close"])
def test_stopping_during_the_one_by_one_retries_sends_no_other_caller(stop: str) -> None:
    inner = MergedFails()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    for _ in range(CALLERS):
        shared.join()  # the calls leave as one batch
    outcomes: dict[int, object] = {}

    def call(i: int) -> None:
        try:
            outcomes[i] = shared.complete([ChatRequest([{"role": "user", "content": str(i)}])])
        except BackendError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    assert inner.alone.wait(GUARD_S)  # the merged call failed; the first caller is resent
    getattr(shared, stop)()
    inner.release.set()
    for thread in threads:
        thread.join(GUARD_S)
    shared.close()
    assert not any(thread.is_alive() for thread in threads)
    assert len(inner.calls) == 2 and len(inner.calls[0]) == CALLERS
    expected = CallCancelled if stop == "cancel" else BackendError
    assert all(isinstance(outcomes[i], expected) for i in range(CALLERS))
