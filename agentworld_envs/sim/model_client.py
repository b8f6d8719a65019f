"""A backend as the simulator uses it: built from plain data, optionally recorded, time-limited.

:meth:`ModelClient.complete` never raises: a backend error or a call that outlives the timeout
becomes a :class:`Fault` in place of each completion, so a simulated step always finishes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentworld_envs.backends import Backend, ChatRequest, Completion, make_backend
from agentworld_envs.backends.replay import RecordingBackend

__all__ = ["Fault", "ModelClient"]


@dataclass(frozen=True)
class Fault:
    """Why a completion is missing: the backend failed, or did not answer in time."""

    kind: Literal["timeout", "backend_error"]
    message: str


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
    """One long-lived daemon thread that runs model calls.

    Reusing the thread keeps the model library's thread pools warm; a daemon thread never
    blocks interpreter exit, even when a call hangs.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="agentworld-model-call", daemon=True).start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()

    def stop(self) -> None:
        """Let the thread end once its current call, if any, returns."""
        self._jobs.put(None)

    def run(self, fn: Callable[[], Any], timeout_s: float) -> Any:
        """Run ``fn`` on the worker; raise :class:`_TimedOut` after ``timeout_s``."""
        job = _Job(fn)
        self._jobs.put(job)
        if not job.done.wait(timeout_s):
            raise _TimedOut
        if job.error is not None:
            raise job.error
        return job.result


class ModelClient:
    """Completes batches of chat requests for the simulator.

    Args:
        backend: A backend name, a config dict for ``make_backend``, or a live
            :class:`~agentworld_envs.backends.Backend` (which the client then never closes).
        record_path: When given, every completion is recorded to (and served from) this JSONL
            request cache, keyed by the request and its sampling parameters.
        timeout_s: Longest wait for one batched call; None waits forever (and calls run in
            the caller's thread). A call that times out keeps running in its daemon thread, and
            its result is discarded.
    """

    def __init__(self, backend: str | dict[str, Any] | Backend, record_path: str | None = None,
                 timeout_s: float | None = None) -> None:
        self._owned = not isinstance(backend, Backend)
        self._inner = make_backend(backend)
        self._recording = RecordingBackend(self._inner, record_path) if record_path else None
        self.backend: Backend = self._recording or self._inner
        self.timeout_s = timeout_s
        self._worker: _Worker | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the worker thread (a copy starts its own)."""
        return {**self.__dict__, "_worker": None}

    def describe(self) -> dict[str, Any]:
        """Plain-data description of the backend."""
        return self.backend.describe()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion | Fault]:
        """One batched backend call; a failure or timeout yields a fault per request."""
        if not requests:
            return []
        try:
            completions = self._call(list(requests))
            if len(completions) != len(requests):
                raise ValueError(f"the backend returned {len(completions)} completions for "
                                 f"{len(requests)} requests")
            return list(completions)
        except _TimedOut:
            fault = Fault("timeout", f"no answer within {self.timeout_s:g} s")
        except Exception as exc:  # noqa: BLE001 - any backend failure becomes a flagged fault
            fault = Fault("backend_error", f"{type(exc).__name__}: {exc}"[:500])
        return [fault] * len(requests)

    def _call(self, requests: list[ChatRequest]) -> list[Completion]:
        if self.timeout_s is None:
            return self.backend.complete(requests)
        if self._worker is None:
            self._worker = _Worker()
        try:
            return self._worker.run(lambda: self.backend.complete(requests), self.timeout_s)
        except _TimedOut:
            self._worker.stop()  # it ends when the hung call returns; the next call gets a new one
            self._worker = None
            raise

    def close(self) -> None:
        """Stop the worker thread; close the recording and any backend this client built."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        if self._recording is not None:
            self._recording.cache.close()
        if self._owned:
            self._inner.close()
