"""Per-call cancellation: a caller that gives up cancels its own call (its ``CallScope``), never
the calls of others sharing the backend; behind ``BatchingBackend`` a call not yet sent is
dropped, and a merged batch is cancelled once every caller in it has gone."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.batching import BatchingBackend
from agentworld_envs.backends.cancelling import CallCancelled, CallScope
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.protocol.chat import Fault, SamplingParams
from agentworld_envs.sim.model_client import ModelClient
from tests.helpers.forward_passes import ForwardPasses
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, fake_backend

GUARD_S = 60.0
"""Hang guard only: every wait below is ended by an event in a passing run."""
PROMPTS = [[{"role": "user", "content": "hi"}],
           [{"role": "user", "content": "lookup order 42 status"}]]
LONG = 24
"""New tokens asked for: the tiny model writes no end token before them on these prompts."""
LONG_WINDOW = 600.0
"""So long that only "every member has sent its call" releases a batch."""


def _ask(text: str, max_tokens: int = 16) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}],
                       sampling=SamplingParams(max_tokens=max_tokens))


class _Caller(threading.Thread):
    """Makes one call of ``backend`` within its own scope; keeps its outcome (or error)."""

    def __init__(self, backend: Backend, request: ChatRequest) -> None:
        super().__init__(daemon=True)
        self.backend, self.request, self.scope = backend, request, CallScope()
        self.outcome: Any = None

    def run(self) -> None:
        with self.scope.bound():
            try:
                self.outcome = self.backend.complete_each([self.request])[0]
            except BaseException as exc:  # noqa: BLE001 - kept for the assertions
                self.outcome = exc

    def finish(self) -> Any:
        self.join(GUARD_S)
        assert not self.is_alive()
        return self.outcome


class _Held(Backend):
    """A third-party backend with only ``complete`` and ``cancel``: each call records its texts
    and waits until released; :meth:`cancel` releases it with an error."""

    name = "held"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.cancels = 0

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        texts = [r.messages[-1]["content"] for r in requests]
        self.calls.append(texts)
        self.entered.set()
        self.release.wait(GUARD_S)
        if self.cancels:
            raise BackendError("cancelled")
        return [Completion(t) for t in texts]

    def cancel(self) -> None:
        self.cancels += 1
        self.release.set()


def _watch_calls(backend: Backend) -> dict[str, Any]:
    """Patch ``backend.complete_each`` to keep each call's outcomes (or error), by the text
    of its first request, and to set ``ended[text]`` when it returns."""
    inner = backend.complete_each
    watched: dict[str, Any] = {"ended": {}}

    def complete_each(requests: Any) -> Any:
        text = requests[0].messages[-1]["content"]
        ended = watched["ended"].setdefault(text, threading.Event())
        try:
            watched[text] = inner(requests)
        except BaseException as exc:
            watched[text] = exc
            raise
        finally:
            ended.set()
        return watched[text]

    backend.complete_each = complete_each  # type: ignore[method-assign]
    for text in ("A", "B", *(p[0]["content"] for p in PROMPTS)):
        watched["ended"][text] = threading.Event()
    return watched


def test_a_call_abandoned_before_it_was_sent_is_never_sent() -> None:
    held = _Held()
    shared = BatchingBackend(held, window_s=0)
    try:
        first = _Caller(shared, _ask("first"))
        first.start()
        assert held.entered.wait(GUARD_S)  # the first batch is in the inner backend
        second = _Caller(shared, _ask("second"))
        second.scope.cancel()  # its caller gives up while the first batch runs
        second.start()
        assert isinstance(second.finish(), CallCancelled)
        assert not held.release.is_set()  # released at once, not after the batch ahead
        held.release.set()
        assert first.finish().text == "first"
    finally:
        shared.close()
    assert held.calls == [["first"]]


@pytest.mark.parametrize("gone", [1, 2])
def test_a_merged_batch_runs_on_for_the_callers_left_and_stops_once_all_have_gone(
        tiny_lm_dir: Path, gone: int) -> None:
    hf = HFBackend(str(tiny_lm_dir), draft="none")
    shared = BatchingBackend(hf, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    shared.join()
    shared.join()  # two members: the batch leaves once both calls wait, as one batch
    batch_ended = _watch_calls(hf)["ended"][PROMPTS[0][0]["content"]]
    callers = [_Caller(shared, ChatRequest(p, sampling=SamplingParams(max_tokens=LONG)))
               for p in PROMPTS]
    cancel_at = len(PROMPTS) + 1  # a decoding pass, after both prompts' prefills
    passes = ForwardPasses(hf._model, cancel_at,
                     lambda: [caller.scope.cancel() for caller in callers[:gone]])
    try:
        for caller in callers:
            caller.start()
        outcomes = [caller.finish() for caller in callers]
        assert batch_ended.wait(GUARD_S)  # callers that gave up are released before its end
    finally:
        passes.remove()
        shared.close()
    assert shared.stats()["batches"] == 1
    assert [isinstance(o, CallCancelled) for o in outcomes] == [True] * gone + [False] * (
        2 - gone)
    if gone == 1:  # the other caller's rows decoded to the end
        assert isinstance(outcomes[1], Completion) and outcomes[1].usage.output_tokens == LONG
    else:
        assert passes.count == cancel_at  # no pass after the last caller went


@pytest.mark.parametrize("gone", [1, 2])
def test_an_inner_backend_without_per_call_cancel_is_cancelled_once_all_callers_have_gone(
        gone: int) -> None:
    held = _Held()
    shared = BatchingBackend(held, window_s=LONG_WINDOW, max_window_s=LONG_WINDOW)
    shared.join()
    shared.join()
    callers = [_Caller(shared, _ask(text)) for text in ("a", "b")]
    try:
        for caller in callers:
            caller.start()
        assert held.entered.wait(GUARD_S)
        for caller in callers[:gone]:
            caller.scope.cancel()
        assert isinstance(callers[0].finish(), CallCancelled)  # released at once
        assert held.cancels == gone - 1  # cancelled only when nobody waits for it
        held.release.set()
        outcomes = [caller.finish() for caller in callers]
    finally:
        shared.close()
    assert held.calls == [["a", "b"]]
    if gone == 1:
        assert isinstance(outcomes[1], Completion) and outcomes[1].text == "b"


def test_model_clients_on_a_shared_batching_backend_that_all_time_out_stop_its_batch(
        tiny_lm_dir: Path) -> None:
    """``agentworld serve``'s shape: every session's client times out while the merged batch
    holds its first pass; once released it runs no other pass."""
    hf = HFBackend(str(tiny_lm_dir), draft="none")
    shared = BatchingBackend(hf)
    gave_up, started, ended = threading.Event(), threading.Event(), threading.Event()
    inner = hf.complete_each

    def watched(requests: Any) -> Any:
        started.set()
        try:
            return inner(requests)
        finally:
            ended.set()

    hf.complete_each = watched  # type: ignore[method-assign]
    passes = ForwardPasses(hf._model, 1, lambda: gave_up.wait(GUARD_S))
    clients = [ModelClient(shared, timeout_s=0.2) for _ in range(3)]
    faults: list[Any] = [None] * 3

    def step(i: int) -> None:
        faults[i] = clients[i].complete(
            [ChatRequest(PROMPTS[i % 2], sampling=SamplingParams(max_tokens=LONG))])

    threads = [threading.Thread(target=step, args=(i,)) for i in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GUARD_S)
        gave_up.set()
        if started.is_set():  # a batch was sent before its callers gave up: wait for its end
            assert ended.wait(GUARD_S)
    finally:
        gave_up.set()
        passes.remove()
        for client in clients:
            client.close()
        shared.close()
    assert [f[0].kind for f in faults] == ["timeout"] * 3
    assert passes.count <= 1  # was LONG and more: the merged batches ran to the end


def test_a_client_that_times_out_leaves_another_clients_call_on_a_shared_hf_backend(
        tiny_lm_dir: Path) -> None:
    hf = HFBackend(str(tiny_lm_dir), draft="none")
    entered, released = threading.Event(), threading.Event()

    def hold(*_: Any) -> None:
        entered.set()
        released.wait(GUARD_S)  # no pass ends before client A has given up

    handle = hf._model.register_forward_hook(hold)
    calls = _watch_calls(hf)
    patient, hasty = ModelClient(hf), ModelClient(hf, timeout_s=0.05)
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.extend(patient.complete(
        [ChatRequest(PROMPTS[0], sampling=SamplingParams(max_tokens=LONG))])))
    try:
        thread.start()
        assert entered.wait(GUARD_S)  # B's call is in its first pass
        faults = hasty.complete([ChatRequest(PROMPTS[1],
                                             sampling=SamplingParams(max_tokens=LONG))])
        released.set()
        thread.join(GUARD_S)
        assert calls["ended"][PROMPTS[1][0]["content"]].wait(GUARD_S)
    finally:
        released.set()
        handle.remove()
        hasty.close()
    assert [f.kind for f in faults] == ["timeout"]
    abandoned = calls[PROMPTS[1][0]["content"]]
    assert [isinstance(o, CallCancelled) for o in abandoned] == [True]  # A's call stopped
    (answer,) = answers
    assert isinstance(answer, Completion), answer  # was a backend_error: A's cancel stopped it
    assert answer.usage.output_tokens == LONG


def test_a_client_that_times_out_leaves_another_clients_request_on_a_shared_openai_backend(
) -> None:
    release = threading.Event()

    def responder(hit: int, body: dict[str, Any]) -> Reply:
        release.wait(GUARD_S)
        return Reply(body=chat_response("answer " + body["messages"][0]["content"]))

    with FakeOpenAIServer(responder) as server:
        backend = fake_backend(server.base_url, timeout_s=GUARD_S)
        calls = _watch_calls(backend)
        patient, hasty = ModelClient(backend), ModelClient(backend, timeout_s=0.05)
        answers: list[Any] = []
        thread = threading.Thread(target=lambda: answers.extend(patient.complete([_ask("B")])))
        thread.start()
        deadline = time.monotonic() + GUARD_S
        while server.hits < 1 and time.monotonic() < deadline:  # B's request is at the server
            time.sleep(0.01)
        faults = hasty.complete([_ask("A")])
        a_ended = calls["ended"]["A"].wait(GUARD_S)  # its batch cancelled, its reply unsent
        release.set()
        thread.join(GUARD_S)
        hasty.close()
    assert [f.kind for f in faults] == ["timeout"]
    assert a_ended and isinstance(calls["A"], asyncio.CancelledError)
    assert [getattr(a, "text", a) for a in answers] == ["answer B"]  # was cancelled with A


class _CancelledElsewhere(Backend):
    """A backend whose call someone's ``cancel()`` stopped, as ``openai`` reports it."""

    name = "cancelled"

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        raise asyncio.CancelledError


@pytest.mark.parametrize("timeout_s", [None, 30.0])
def test_a_call_another_cancel_stopped_is_a_fault_not_an_escaping_error(
        timeout_s: float | None) -> None:
    client = ModelClient(_CancelledElsewhere(), timeout_s=timeout_s)
    try:
        faults = client.complete([_ask("a"), _ask("b")])
    finally:
        client.close()
    assert [type(f) for f in faults] == [Fault, Fault]
    assert {f.kind for f in faults} == {"backend_error"}
    assert "cancelled" in faults[0].message


def test_recording_clients_on_a_shared_hf_backend_cancel_their_own_call_and_record_only_theirs(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    """Through the record cache (``record_path``) the cancel was global again: client A's
    timeout cancelled client B's call. A's own late answer must still go unrecorded."""
    hf = HFBackend(str(tiny_lm_dir), draft="none")
    entered, released = threading.Event(), threading.Event()

    def hold(*_: Any) -> None:
        entered.set()
        released.wait(GUARD_S)

    handle = hf._model.register_forward_hook(hold)
    patient = ModelClient(hf, record_path=str(tmp_path / "b.jsonl"))
    hasty = ModelClient(hf, record_path=str(tmp_path / "a.jsonl"), timeout_s=0.05)
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.extend(patient.complete(
        [ChatRequest(PROMPTS[0], sampling=SamplingParams(max_tokens=LONG))])))
    try:
        thread.start()
        assert entered.wait(GUARD_S)
        faults = hasty.complete([ChatRequest(PROMPTS[1],
                                             sampling=SamplingParams(max_tokens=LONG))])
        released.set()
        thread.join(GUARD_S)
    finally:
        released.set()
        handle.remove()
        hasty.close()
    assert [f.kind for f in faults] == ["timeout"]
    (answer,) = answers
    assert isinstance(answer, Completion), answer  # was a backend_error: A's cancel stopped it
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 1
    assert (tmp_path / "a.jsonl").read_text() == ""  # the abandoned call records nothing
