"""A backend as the simulator uses it: built from plain data, optionally recorded, time-limited.

:meth:`ModelClient.complete` never raises: a backend error or a call that outlives the timeout
becomes a :class:`Fault` in place of the completions it cost (only the failed request's, when
the backend reports failures per request), and so does an answer that is not a
:class:`Completion` with text (None, bytes), so a simulated step always finishes and every
caller sees, and counts, the same faults.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.backends import Backend, ChatRequest, Completion, make_backend
from agentworld_envs.backends.cancelling import CallCancelled, CallScope
from agentworld_envs.backends.registry import budget_defaults
from agentworld_envs.backends.replay import RecordingBackend
from agentworld_envs.errors import FieldedError
from agentworld_envs.protocol.chat import Fault

__all__ = ["ModelClient", "WorldModelFault", "checked_outcome", "model_identity"]


class WorldModelFault(FieldedError, RuntimeError):
    """Raised by a step of an env made with ``on_fault="raise"`` when the world model or the
    judge failed.

    The step itself has finished (a fallback observation is in the episode's history, a failed
    judge's reward is 0 with ``reward_breakdown["judge_fault"]``; a vector env has reset the
    sub-envs whose episode ended); ``results`` holds every sub-env's step result, as it was
    before any reset, and ``faults`` the indices that failed.
    """

    def __init__(self, message: str, results: list[Any], faults: list[int]) -> None:
        super().__init__(message)
        self.results, self.faults = results, faults


def model_identity(description: dict[str, Any]) -> dict[str, Any]:
    """``{"backend", "model"}`` of a backend description (and ``adapter``, the adapter's folder
    name or None, and ``draft``, for backends that take them), seen through a recording
    wrapper."""
    inner = _unwrapped(description)
    adapter = ({"adapter": Path(inner["adapter"]).name if inner["adapter"] else None}
               if "adapter" in inner else {})
    draft = {"draft": inner["draft"]} if "draft" in inner else {}
    return {"backend": inner.get("name"), "model": inner.get("model"), **adapter, **draft,
            **({"recorded_to": description["path"]} if "inner" in description else {})}


def _unwrapped(description: dict[str, Any]) -> dict[str, Any]:
    """The description of the backend a recording wrapper holds (or ``description`` itself)."""
    return description.get("inner", description)


def _backend_fault(exc: BaseException) -> Fault:
    if isinstance(exc, asyncio.CancelledError):
        exc = CallCancelled("the call was cancelled: the backend's cancel() stopped every call "
                            "in flight")
    return Fault("backend_error", f"{type(exc).__name__}: {exc}"[:500])


def checked_outcome(outcome: Any) -> Completion | Fault:
    """``outcome`` when it is a :class:`Completion` with ``str`` text or a :class:`Fault`; else
    (an exception, None, a completion of bytes...) a ``backend_error`` fault saying what came."""
    if isinstance(outcome, BaseException):
        return _backend_fault(outcome)
    if isinstance(outcome, Fault) or (isinstance(outcome, Completion)
                                      and isinstance(outcome.text, str)):
        return outcome
    what = (f"a Completion whose text is {type(outcome.text).__name__}"
            if isinstance(outcome, Completion) else type(outcome).__name__)
    return Fault("backend_error", f"the backend answered {what}, not a completion with text")


class _TimedOut(Exception):
    pass


class _Job:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self.error = exc
        finally:
            self.done.set()


class _Worker:
    """One long-lived daemon thread that runs model calls, one at a time, for ``owner``.

    Reusing the thread keeps the model library's thread pools warm; a daemon thread never
    blocks interpreter exit, even when a call hangs. A call that timed out keeps the thread
    until it returns, and later calls wait for it (within their own time limit) rather than
    starting more threads, so timed-out calls never pile up threads. The thread holds nothing
    of ``owner`` between calls, and ends once ``owner`` is collected unclosed (an env never
    closed).
    """

    def __init__(self, owner: object) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._idle = threading.Event()
        self._idle.set()
        self._stop = weakref.finalize(owner, self._jobs.put, None)
        threading.Thread(target=self._serve, name="agentworld-model-call", daemon=True).start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()
            del job  # its call holds the owner, which must stay collectable while idle
            self._idle.set()

    def stop(self) -> None:
        """Let the thread end once its current call, if any, returns."""
        self._stop()

    def run(self, fn: Callable[[], Any], timeout_s: float) -> Any:
        """Run ``fn`` on the worker; raise :class:`_TimedOut` unless it is done in ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        if not self._idle.wait(timeout_s):
            raise _TimedOut(f"no answer within {timeout_s:g} s (the backend is still busy "
                            "with an earlier call that timed out)")
        self._idle.clear()
        job = _Job(fn)
        self._jobs.put(job)
        if not job.done.wait(max(0.0, deadline - time.monotonic())):
            raise _TimedOut(f"no answer within {timeout_s:g} s (a slower model needs a larger "
                            "timeout_s in the env's settings)")
        if job.error is not None:
            raise job.error
        return job.result


class _Holders:
    """How many clients share what one client built (its backend, its recording): a deep copy
    of the client is one more, and the last one closed closes them. Pickled, it starts again
    at one: an unpickled client holds backends of its own."""

    def __init__(self) -> None:
        self._count, self._lock = 1, threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Holders:
        with self._lock:
            self._count += 1
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return _Holders, ()

    def release(self) -> bool:
        """One holder fewer; whether it was the last."""
        with self._lock:
            self._count -= 1
            return self._count == 0


class ModelClient:
    """Completes batches of chat requests for the simulator.

    Args:
        backend: A backend name, a config dict for ``make_backend``, or a live
            :class:`~agentworld_envs.backends.Backend` (which the client then never closes).
        record_path: When given, every completion is recorded to (and served from) this JSONL
            request cache, keyed by the request and its sampling parameters.
        timeout_s: Longest wait for one batched call of a blocking backend
            (:attr:`~agentworld_envs.backends.Backend.blocking`); None waits forever. A
            backend built here from a config without a ``timeout_s`` of its own gets this
            one (a backend that retries, an equal share per attempt:
            :func:`~agentworld_envs.backends.registry.budget_defaults`).
            Calls run in the caller's thread when it is None or the backend does not block. A
            call that times out, or that Ctrl-C abandons, is cancelled: that call alone, by its
            :class:`~agentworld_envs.backends.cancelling.CallScope`, where the backend can
            (:attr:`~agentworld_envs.backends.Backend.cancels_each_call`), so clients sharing
            a live backend keep their own calls; else every call in flight
            (:meth:`~agentworld_envs.backends.Backend.cancel`: a server backend closes its
            connections). A backend that cannot cancel keeps it running in the client's one
            worker thread, its result discarded, and the next call waits for it to end.

    A deep copy shares the live backend (and the recording); of the client and its copies,
    the last one closed closes what the client built. A pickled copy builds its own.
    """

    def __init__(self, backend: str | dict[str, Any] | Backend, record_path: str | None = None,
                 timeout_s: float | None = None) -> None:
        self._owned = not isinstance(backend, Backend)
        self._inner = make_backend(backend, budget_defaults(backend, timeout_s))
        self._recording = RecordingBackend(self._inner, record_path) if record_path else None
        self.backend: Backend = self._recording or self._inner
        self.timeout_s = timeout_s
        self._worker: _Worker | None = None
        self._holders = _Holders()
        self._closed = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the worker thread (a copy starts its own)."""
        return {**self.__dict__, "_worker": None}

    def describe(self) -> dict[str, Any]:
        """Plain-data description of the backend."""
        return self.backend.describe()

    @property
    def answers_with_placeholders(self) -> bool:
        """Whether the backend says its answers are placeholders, not a model's
        (``"placeholder": true`` in its description, as the scripted backend's)."""
        return bool(_unwrapped(self.describe()).get("placeholder"))

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion | Fault]:
        """One batched backend call; each failed request, or all on a timeout, yields a fault."""
        if not requests:
            return []
        try:
            outcomes = self._call(list(requests))
            if len(outcomes) != len(requests):
                raise ValueError(f"the backend returned {len(outcomes)} completions for "
                                 f"{len(requests)} requests")
        except _TimedOut as exc:
            return [Fault("timeout", str(exc))] * len(requests)
        except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - any backend
            # failure (a call another caller's cancel stopped included) becomes a flagged fault
            return [_backend_fault(exc)] * len(requests)
        return [checked_outcome(o) for o in outcomes]

    def _call(self, requests: list[ChatRequest]) -> list[Any]:
        if self.timeout_s is None or not self.backend.blocking:
            return self.backend.complete_each(requests)
        if self._worker is None:
            self._worker = _Worker(self)
        scope = CallScope()

        def call() -> list[Any]:
            with scope.bound():
                return self.backend.complete_each(requests)

        try:
            return self._worker.run(call, self.timeout_s)
        except (_TimedOut, KeyboardInterrupt):
            scope.cancel()  # the abandoned call must not keep the server busy, nor its late
            if not self.backend.cancels_each_call:  # answer be recorded
                self.backend.cancel()
            raise

    def close(self) -> None:
        """Stop the worker thread; close the recording and any backend this client built, if
        no deep copy of it is still open. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        if not self._holders.release():
            return
        if self._recording is not None:
            self._recording.cache.close()
        if self._owned:
            self._inner.close()
