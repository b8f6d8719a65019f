"""BatchingBackend: many threads' concurrent calls reach the inner backend as one batch."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.batching import BatchingBackend

LONG_WINDOW = 600.0
"""So long that only "every stepping thread has sent its call" can release a batch."""


class Echo(Backend):
    """Answers each request with its own text; fails a whole call that holds "poison"; answers
    "refuse" with a per-request error."""

    name = "echo"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        raise NotImplementedError

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        texts = [r.messages[-1]["content"] for r in requests]
        self.calls.append(texts)
        if "poison" in texts:
            raise RuntimeError("the model choked")
        return [BackendError("refused") if t == "refuse" else Completion(t) for t in texts]


def _request(text: str) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}])


def _step_together(shared: BatchingBackend, texts: list[str | None]) -> list[object]:
    """One thread per text, each inside ``stepping()``; None steps without calling."""
    outcomes: list[object] = [None] * len(texts)
    inside = threading.Barrier(len(texts))

    def step(i: int, text: str | None) -> None:
        with shared.stepping():
            inside.wait()
            if text is None:
                return
            try:
                outcomes[i] = shared.complete_each([_request(text)])[0]
            except Exception as exc:  # noqa: BLE001 - recorded for the assertions
                outcomes[i] = exc

    threads = [threading.Thread(target=step, args=(i, t)) for i, t in enumerate(texts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def test_concurrent_steps_make_one_call_and_each_gets_its_own_answer() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    texts = [f"session {i}" for i in range(16)]
    outcomes = _step_together(shared, texts)
    assert len(inner.calls) == 1 and sorted(inner.calls[0]) == sorted(texts)
    assert [o.text for o in outcomes] == texts
    stats = shared.stats()
    assert stats.pop("busy_s") >= 0
    assert stats == {"batches": 1, "requests": 16, "largest": 16, "stepping": 0, "members": 0}


def test_a_failing_request_fails_only_its_caller() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    outcomes = _step_together(shared, ["a", "poison", "b", "refuse"])
    assert outcomes[0].text == "a" and outcomes[2].text == "b"
    assert isinstance(outcomes[1], RuntimeError) and "choked" in str(outcomes[1])
    assert isinstance(outcomes[3], BackendError)
    assert len(inner.calls) == 5  # the merged call, then each caller on its own


def test_a_step_that_sends_no_call_holds_a_batch_no_longer_than_the_window() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=0.05)
    outcomes = _step_together(shared, ["only", None])
    assert outcomes[0].text == "only" and inner.calls == [["only"]]


def test_a_call_outside_any_step_leaves_at_once_and_describes_the_inner_backend() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    assert [c.text for c in shared.complete([_request("x"), _request("y")])] == ["x", "y"]
    assert shared.describe() == {"name": "echo"} and shared.name == "echo"
    with pytest.raises(BackendError, match="refused"):
        shared.complete([_request("refuse")])


def test_close_fails_waiting_calls_and_later_ones() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    errors: list[BaseException] = []
    started = threading.Event()

    def wait_in_a_batch() -> None:
        with shared.stepping(), shared.stepping():  # counts as two stepping threads
            started.set()
            try:
                shared.complete_each([_request("never")])
            except BackendError as exc:
                errors.append(exc)

    thread = threading.Thread(target=wait_in_a_batch)
    thread.start()
    started.wait(60)
    for _ in range(60_000):  # until the call waits for the second stepper
        if shared._pending:
            break
        threading.Event().wait(0.01)
    shared.close()
    thread.join(timeout=600)
    assert errors and "closed" in str(errors[0]) and inner.calls == []
    with pytest.raises(BackendError, match="closed"):
        shared.complete([_request("late")])


def test_a_batch_waits_for_every_member_within_its_window() -> None:
    inner = Echo()
    shared = BatchingBackend(inner, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    for _ in range(3):
        shared.join()
    outcomes: list[object] = []

    def call(text: str) -> None:  # outside any step: only the members hold the batch
        outcomes.append(shared.complete([_request(text)])[0].text)

    threads = [threading.Thread(target=call, args=(t,)) for t in "xyz"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert sorted(outcomes) == ["x", "y", "z"]
    assert len(inner.calls) == 1 and sorted(inner.calls[0]) == ["x", "y", "z"]
    shared.leave()
    assert shared.stats()["members"] == 2
