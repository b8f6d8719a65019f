"""Cancelling backend calls: one call, by its caller, or every call in flight.

A caller that may give up on a call (the simulator's ``timeout_s``, Ctrl-C) makes it within a
:class:`CallScope` (``with scope.bound(): backend.complete_each(requests)``) and cancels that
scope, from any thread, when it gives up. A backend that can stop one call alone
(:attr:`~agentworld_envs.backends.base.Backend.cancels_each_call`) reads
:func:`current_scope` when a call begins, in the caller's thread, and holds what stops its part
of the call within :func:`stopped_with` (``with stopped_with(scope, stop): ...``): a cancel runs
it, even one that came before the call began. Calls of other callers, even on the same backend
at the same time, run on.

A backend that decodes in its caller's thread cannot be interrupted from another one, so each
call holds a flag (:meth:`InFlight.call`) that its decoding reads between steps: the call's
scope raises it, and :meth:`InFlight.cancel` raises the flags of every call in flight (as
:meth:`~agentworld_envs.backends.base.Backend.cancel` asks, on Ctrl-C), their rows stop
decoding within one step, freeing the model for the next call, and the calls raise
:class:`CallCancelled`. A call made after the cancel is not touched.

Example:
    >>> in_flight, scope, other = InFlight(), CallScope(), CallScope()
    >>> with scope.bound(), in_flight.call() as flag:
    ...     stopped = stop_hook(flag, None)
    ...     before = stopped([7], 1)
    ...     other.cancel()
    ...     still = stopped([7], 1)
    ...     scope.cancel()
    ...     after = stopped([7], 1)
    >>> before, still, after
    (False, False, True)
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentworld_envs.backends.base import BackendError

__all__ = ["CallCancelled", "CallScope", "InFlight", "cancel_criterion", "current_scope",
           "raise_if_cancelled", "stop_hook", "stopped_with"]


class CallCancelled(BackendError):
    """The call was cancelled (its caller gave up on it) before it finished."""

    @classmethod
    def by_caller(cls) -> CallCancelled:
        """The error of a call its caller gave up on (a timeout, an interrupt, a served
        session's client that left)."""
        return cls("the call was cancelled: its caller gave up on it (it timed out, was "
                   "interrupted, or its client left)")


class CallScope:
    """One backend call as its caller sees it: :meth:`cancel`, from any thread, stops that call
    alone in the backends on its path that can (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._stops: dict[object, Callable[[], None]] = {}

    @contextlib.contextmanager
    def bound(self) -> Iterator[None]:
        """The block's backend calls, in this thread, are this scope's
        (:func:`current_scope`)."""
        token = _CURRENT.set(self)
        try:
            yield
        finally:
            _CURRENT.reset(token)

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called (what the call gives is then not its caller's)."""
        return self._cancelled

    def cancel(self) -> None:
        """Run every stop held now (once, however often it is called)."""
        with self._lock:  # held while they run: no stop runs after its block has ended
            if self._cancelled:
                return
            self._cancelled = True
            for stop in self._stops.values():
                stop()

    @contextlib.contextmanager
    def on_cancel(self, stop: Callable[[], None]) -> Iterator[None]:
        """Run ``stop`` (quick, taking no lock a stop of this scope may hold) on
        :meth:`cancel` while the block runs; at once when the scope is cancelled already."""
        key = object()
        with self._lock:
            if self._cancelled:
                stop()
            else:
                self._stops[key] = stop
        try:
            yield
        finally:
            with self._lock:
                self._stops.pop(key, None)


_CURRENT: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "agentworld_call_scope", default=None)


def current_scope() -> CallScope | None:
    """The scope of the call this thread makes now (:meth:`CallScope.bound`), if any."""
    return _CURRENT.get()


def stopped_with(scope: CallScope | None, stop: Callable[[], None]
                 ) -> contextlib.AbstractContextManager[None]:
    """:meth:`CallScope.on_cancel` of ``scope``; nothing when there is none."""
    return scope.on_cancel(stop) if scope is not None else contextlib.nullcontext()


class InFlight:
    """The calls a backend is running, each with its cancel flag. Safe to share between
    threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flags: set[threading.Event] = set()
        self._current = threading.local()

    @contextlib.contextmanager
    def call(self) -> Iterator[threading.Event]:
        """A call's flag, in flight for the ``with`` block and raised when the call's scope
        (:func:`current_scope`) is cancelled; a call made within another, in the same thread,
        shares its flag."""
        if (outer := getattr(self._current, "flag", None)) is not None:
            yield outer
            return
        flag = self._current.flag = threading.Event()
        with self._lock:
            self._flags.add(flag)
        try:
            with stopped_with(current_scope(), flag.set):
                yield flag
        finally:
            self._current.flag = None
            with self._lock:
                self._flags.discard(flag)

    def cancel(self) -> None:
        """Raise the flag of every call in flight."""
        with self._lock:
            flags = list(self._flags)
        for flag in flags:
            flag.set()


def stop_hook(flag: threading.Event, watch: Callable[[Sequence[int], int], bool] | None
              ) -> Callable[[Sequence[int], int], bool]:
    """A ragged or drafted decode's ``stopped(new_ids, fresh)``: a row stops once its call is
    cancelled or ``watch`` (a :class:`~agentworld_envs.backends.stops.StopWatch`) sees its stop
    string."""
    if watch is None:
        return lambda new_ids, fresh: flag.is_set()
    return lambda new_ids, fresh: flag.is_set() or watch(new_ids, fresh)


def cancel_criterion(torch: Any, flag: threading.Event) -> Callable[..., Any]:
    """``generate``'s stopping criterion (transformers' ``StoppingCriteria`` protocol): every
    row is done once the call is cancelled."""
    def done(input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        return torch.full((input_ids.shape[0],), flag.is_set(), dtype=torch.bool,
                          device=input_ids.device)
    return done


def raise_if_cancelled(flag: threading.Event) -> None:
    """Raise :class:`CallCancelled` once the call's flag is raised: what it decoded was cut
    short, so it must be neither answered nor kept."""
    if flag.is_set():
        raise CallCancelled.by_caller()
