"""Cancelling in-process calls between decoding steps.

A backend that decodes in its caller's thread cannot be interrupted from another one, so each
call holds a flag (:meth:`InFlight.call`) that its decoding reads between steps:
:meth:`InFlight.cancel` raises the flags of the calls in flight (as
:meth:`~agentworld_envs.backends.base.Backend.cancel` asks, on a timed-out or interrupted
call), their rows stop decoding within one step, freeing the model for the next call, and the
calls raise :class:`CallCancelled`. A call made after the cancel is not touched.

Example:
    >>> in_flight = InFlight()
    >>> with in_flight.call() as flag:
    ...     stopped = stop_hook(flag, None)
    ...     before = stopped([7], 1)
    ...     in_flight.cancel()
    ...     after = stopped([7], 1)
    >>> before, after
    (False, True)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentworld_envs.backends.base import BackendError

__all__ = ["CallCancelled", "InFlight", "cancel_criterion", "raise_if_cancelled", "stop_hook"]


class CallCancelled(BackendError):
    """The call was cancelled (its caller gave up on it) before it finished."""


class InFlight:
    """The calls a backend is running, each with its cancel flag. Safe to share between
    threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flags: set[threading.Event] = set()
        self._current = threading.local()

    @contextlib.contextmanager
    def call(self) -> Iterator[threading.Event]:
        """A call's flag, in flight for the ``with`` block; a call made within another, in
        the same thread, shares its flag."""
        if (outer := getattr(self._current, "flag", None)) is not None:
            yield outer
            return
        flag = self._current.flag = threading.Event()
        with self._lock:
            self._flags.add(flag)
        try:
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
        raise CallCancelled("the call was cancelled: its caller gave up on it (it timed out "
                            "or was interrupted)")
