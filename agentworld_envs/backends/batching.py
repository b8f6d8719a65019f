"""A backend shared by many threads whose concurrent calls go to the model as one batch.

Each caller (an env stepping in its own thread, as every session of ``agentworld serve`` does)
calls :meth:`BatchingBackend.complete_each` and waits. One dispatcher thread takes every call
waiting at that moment and sends all their requests to the inner backend as ONE
``complete_each`` call, as the in-process vector env does for its sub-envs. A batch leaves when
every caller that is stepping (see :meth:`BatchingBackend.stepping`) has sent its call, or when
``window_s`` has passed since the oldest waiting call arrived, whichever comes first: a window
never grows with later arrivals. Calls that arrive while a batch runs form the next one.

A backend that never blocks (:attr:`Backend.blocking` false: ``scripted``, ``replay``) gains
nothing from batching; its calls run at once in the caller's thread.

A fault stays with its caller: when the merged call raises, each caller's requests are sent
again on their own, so one bad request fails only its own session.

A caller may give up on its call (its :class:`~agentworld_envs.backends.cancelling.CallScope`
is cancelled, as a session's simulator does when its ``timeout_s`` passes): the call raises
:class:`~agentworld_envs.backends.cancelling.CallCancelled` at once, and its requests are never
sent if they were still waiting. A batch already sent runs on for the callers still waiting
for it; once every one of them has gone, it is cancelled in the inner backend (by the batch's
scope, or by the inner backend's :meth:`~agentworld_envs.backends.base.Backend.cancel` where it
cannot cancel one call alone).

Example (``scripted`` never blocks, so no batch is formed for it):
    >>> from agentworld_envs.backends import ChatRequest, make_backend
    >>> shared = BatchingBackend(make_backend("scripted"))
    >>> request = ChatRequest([{"role": "user", "content": "hi"}])
    >>> len(shared.complete([request, request])), shared.blocking, shared.stats()["batches"]
    (2, False, 0)
    >>> shared.close()
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentworld_envs.backends.base import Backend, BackendError, first_error_or_completions
from agentworld_envs.backends.cancelling import (
    CallCancelled,
    CallScope,
    current_scope,
    stopped_with,
)
from agentworld_envs.protocol.chat import ChatRequest, Completion

__all__ = ["BatchingBackend"]

Outcome = Completion | BackendError


class _Call:
    __slots__ = ("requests", "arrived", "outcomes", "error", "done", "abandoned")

    def __init__(self, requests: list[ChatRequest]) -> None:
        self.requests = requests
        self.arrived = time.monotonic()
        self.outcomes: list[Outcome] | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.abandoned = False


class BatchingBackend(Backend):
    """Merge the concurrent calls of many threads into one call of ``inner``.

    Args:
        inner: The backend that does the work (built from plain data by the caller). It is
            closed with this one.
        window_s: The shortest window: how long a call may wait for others before its batch
            leaves, counted from the oldest waiting call.
        max_window_s: The longest window, however slow the last batch was.
    """

    cancels_each_call = True

    WINDOW_SHARE = 0.1
    """The window's share of the last batch's time, where that is longer than ``window_s``."""

    def __init__(self, inner: Backend, window_s: float = 0.005,
                 max_window_s: float = 1.0) -> None:
        if not 0 <= window_s <= max_window_s:
            raise ValueError("need 0 <= window_s <= max_window_s")
        self.inner, self.window_s, self.max_window_s = inner, window_s, max_window_s
        self.name = inner.name
        self.blocking = inner.blocking
        self._cond = threading.Condition()
        self._pending: list[_Call] = []
        self._stepping = 0
        self._closed = False
        self._dispatcher: threading.Thread | None = None
        self._wakes: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._asleep = True
        """Whether the dispatcher waits on ``_wakes``: for a true (a call came) or a false
        (stop: this backend was closed, or collected unclosed)."""
        self._stop = weakref.finalize(self, self._wakes.put, False)
        self._serving: list[_Call] = []
        """The calls of the batch the dispatcher serves now (sent, or, after it failed, to be
        sent again one caller at a time)."""
        self._sent: tuple[list[_Call], CallScope] | None = None
        """The calls whose requests the inner backend has now, and that inner call's scope."""
        self._batches = self._requests = self._largest = 0
        self._members = 0
        self._last_seconds, self._free_since = 0.0, 0.0
        self._busy_s = 0.0

    def describe(self) -> dict[str, Any]:
        """The inner backend's description: batching changes no answer."""
        return self.inner.describe()

    @contextlib.contextmanager
    def stepping(self) -> Iterator[None]:
        """Mark the calling thread as one that may send a call soon (an env step).

        A batch leaves at once when every stepping thread has sent its call, instead of
        waiting for the window.
        """
        with self._cond:
            self._stepping += 1
        try:
            yield
        finally:
            with self._cond:
                self._stepping -= 1
                self._cond.notify_all()

    def join(self) -> None:
        """Count one more member: a caller expected to send calls (a session whose episode
        is under way), which a batch waits for within its window."""
        with self._cond:
            self._members += 1

    def leave(self) -> None:
        """Count one member fewer (its episode ended, or its session closed)."""
        with self._cond:
            self._members -= 1
            self._cond.notify_all()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete ``requests`` within the next batch; raise its first error."""
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Outcome]:
        """Complete ``requests`` within the next batch, each failure in its own place."""
        if not requests:
            return []
        self._check_open()
        if not self.blocking:
            return self._checked(list(requests))
        call = _Call(list(requests))
        with self._cond:
            self._check_open()  # again: close() may have come meanwhile
            self._pending.append(call)
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(
                    target=_dispatch, args=(weakref.ref(self), self._wakes),
                    name="agentworld-batcher", daemon=True)
                self._dispatcher.start()
            if self._asleep:
                self._asleep = False
                self._wakes.put(True)
            self._cond.notify_all()
        with stopped_with(current_scope(),
                          lambda: self._abandon(call, CallCancelled.by_caller())):
            call.done.wait()
        if call.error is not None:
            raise call.error
        return call.outcomes  # type: ignore[return-value]

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError("the batching backend is closed")

    def cancel(self) -> None:
        """Cancel every call: those waiting are never sent, the batch in flight is cancelled
        in the inner backend, and each raises ``CallCancelled``."""
        self._abandon_all(CallCancelled.by_caller)

    def _abandon_all(self, error: Callable[[], BackendError]) -> None:
        """:meth:`_abandon` every call waiting or in the batch served now, each with its own
        ``error()``."""
        with self._cond:
            calls = [*self._pending, *self._serving]
        for call in calls:
            self._abandon(call, error())

    def _abandon(self, call: _Call, error: BackendError) -> None:
        """Release ``call``'s caller with ``error``; drop it if it is not sent yet, and cancel
        the inner call once no caller waits for it."""
        with self._cond:
            if call.abandoned or call.done.is_set():
                return
            call.abandoned = True
            call.error = error
            call.done.set()
            if call in self._pending:
                self._pending.remove(call)
            sent = self._sent
            if sent is None or call not in sent[0] or not all(c.abandoned for c in sent[0]):
                return
        sent[1].cancel()

    def stats(self) -> dict[str, Any]:
        """Calls served so far: ``batches`` sent to the inner backend, ``requests`` in them,
        the ``largest`` batch (in requests), ``busy_s`` (seconds inside the inner backend),
        threads ``stepping`` now and ``members``."""
        with self._cond:
            return {"batches": self._batches, "requests": self._requests,
                    "largest": self._largest, "busy_s": round(self._busy_s, 6),
                    "stepping": self._stepping, "members": self._members}

    def _send_while_waiting(self) -> None:
        """Send batches until no call waits (or this backend is closed)."""
        while (batch := self._next_batch()) is not None:
            self._send(batch)

    def _next_batch(self) -> list[_Call] | None:
        """The calls of the next batch, once it may leave; None once closed, or once no call
        waits (the dispatcher then sleeps until one comes)."""
        with self._cond:
            while not self._closed:
                if not self._pending:
                    self._asleep = True
                    return None
                window = min(self.max_window_s,
                             max(self.window_s, self.WINDOW_SHARE * self._last_seconds))
                opened = max(self._pending[0].arrived, self._free_since)
                left = opened + window - time.monotonic()
                if len(self._pending) < max(self._stepping, self._members) and left > 0:
                    self._cond.wait(left)
                    continue
                batch, self._pending = self._pending, []
                self._serving = batch
                size = sum(len(call.requests) for call in batch)
                self._batches += 1
                self._requests += size
                self._largest = max(self._largest, size)
                return batch
            return None

    def _send(self, batch: list[_Call]) -> None:
        began = time.monotonic()
        try:
            self._run(batch)
        finally:
            self._free_since = time.monotonic()
            self._last_seconds = self._free_since - began
            self._busy_s += self._last_seconds
            with self._cond:
                self._serving = []
            for call in batch:
                call.done.set()

    def _run(self, batch: list[_Call]) -> None:
        try:
            with self._sending(batch) as sent:
                outcomes = self._merged(sent)
        except BaseException as exc:  # noqa: BLE001 - handed to the callers
            if len(sent) == 1:
                self._settle(sent[0], error=exc)
                return
            for call in sent:  # one at a time, so a bad request fails only its caller
                try:
                    with self._sending([call]) as alone:
                        self._settle(call, self._merged(alone))
                except BaseException as own:  # noqa: BLE001 - handed to its caller
                    self._settle(call, error=own)
            return
        start = 0
        for call in sent:
            self._settle(call, outcomes[start:start + len(call.requests)])
            start += len(call.requests)

    @contextlib.contextmanager
    def _sending(self, calls: list[_Call]) -> Iterator[list[_Call]]:
        """Those of ``calls`` whose callers still wait: the block sends their requests, in a
        scope that :meth:`_abandon` cancels once they have all gone (cancelling every call of
        an inner backend that cannot cancel one alone: this one's calls are one at a time)."""
        scope = CallScope()
        with self._cond:
            waiting = [call for call in calls if not call.abandoned]
            self._sent = waiting, scope
        try:
            with scope.bound(), stopped_with(None if self.inner.cancels_each_call else scope,
                                             self.inner.cancel):
                yield waiting
        finally:
            with self._cond:
                self._sent = None

    def _merged(self, calls: list[_Call]) -> list[Outcome]:
        """The outcomes of every request of ``calls``, from one call of the inner backend."""
        return self._checked([request for call in calls for request in call.requests]
                             ) if calls else []

    def _settle(self, call: _Call, outcomes: list[Outcome] | None = None,
                error: BaseException | None = None) -> None:
        """Hand ``call`` its outcomes or error, unless its caller has gone (with its own)."""
        with self._cond:
            if not call.abandoned:
                call.outcomes, call.error = outcomes, error

    def _checked(self, requests: list[ChatRequest]) -> list[Outcome]:
        outcomes = list(self.inner.complete_each(requests))
        if len(outcomes) != len(requests):
            raise BackendError(f"the backend returned {len(outcomes)} completions for "
                               f"{len(requests)} requests")
        return outcomes

    def close(self) -> None:
        """Fail every call, waiting or sent (cancelling the batch in flight), stop the
        dispatcher, close the inner backend."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._stop()
        self._abandon_all(_closed_error)
        self.inner.close()


def _closed_error() -> BackendError:
    return BackendError("the batching backend was closed")


def _dispatch(backend: weakref.ref[BatchingBackend], wakes: queue.SimpleQueue[bool]) -> None:
    """The dispatcher thread: on each wake, send batches while calls wait. Asleep, it holds
    nothing of its backend, so one never closed is collected (with its inner backend) once
    nothing else holds it, and its finaliser's stop ends the thread."""
    while wakes.get() and (awake := backend()) is not None:
        awake._send_while_waiting()
        del awake
