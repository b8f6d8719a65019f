"""The one batched interface every model backend implements.

A list of chat requests goes in; one :class:`Completion` per request comes out, in order.
Backends are built from plain data (``{"name": "openai", "model": ..., ...}``) by
:func:`agentworld_envs.backends.make_backend`, so env kwargs that name a backend stay
serialisable.

A backend needs only :meth:`Backend.complete`; the rest is optional. A caller may give up on a
call (the simulator's ``timeout_s``, Ctrl-C) from another thread than the one that made it. It
makes each call within a :class:`~agentworld_envs.backends.cancelling.CallScope` and, on giving
up, cancels that scope; where the backend cannot stop one call alone
(:attr:`Backend.cancels_each_call` false, the default), it calls :meth:`Backend.cancel`, which
stops every call in flight, as every backend did before scopes.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from agentworld_envs.errors import FieldedError
from agentworld_envs.protocol.chat import (
    ChatRequest,
    Completion,
)

__all__ = [
    "Backend",
    "BackendError",
    "first_error_or_completions",
]


class BackendError(FieldedError, RuntimeError):
    """A backend could not produce a completion (after its retries, where it retries)."""


class Backend(abc.ABC):
    """A model that completes a batch of chat requests."""

    name: str = "backend"
    blocking: bool = True
    """Whether a call may wait on something outside this process's control (a server, a
    model). The simulator bounds only such calls by its timeout, running them in a worker
    thread; a backend that computes its answers at once (``scripted``, ``replay``) is called
    directly."""
    cancels_each_call: bool = False
    """Whether the backend stops one call alone when its caller cancels the call's
    :class:`~agentworld_envs.backends.cancelling.CallScope` (read with
    :func:`~agentworld_envs.backends.cancelling.current_scope` when the call begins, in the
    caller's thread), leaving the calls of other callers running. Where false, a caller that
    gives up calls :meth:`cancel` instead."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Backend:
        """A live backend is a handle on a model or a server: copies share it. (Gymnasium
        deep-copies an env's make arguments for each wrapper's ``spec``; copying an ``hf``
        backend would load its model again.)"""
        return self

    @abc.abstractmethod
    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete every request; the result has the same length and order.

        Raises:
            BackendError: when a request cannot be completed.
        """

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """Complete every request, each failure reported in its own place.

        Backends that send requests separately (``openai``) override this so that one failed
        request costs only its own completion. By default one :meth:`complete` call is made and
        its error, if any, stands for every request.
        """
        try:
            return list(self.complete(requests))
        except BackendError as exc:
            return [exc] * len(requests)

    def describe(self) -> dict[str, Any]:
        """Plain-data description for run metadata. Never includes secrets."""
        return {"name": self.name}

    def cancel(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Stop every call in flight, from any thread, as far as the backend can (a server
        backend closes their connections, so the server can stop working for nothing); the
        cancelled calls raise. Called on Ctrl-C, and on a timed-out call where the backend
        cannot cancel that call alone (:attr:`cancels_each_call`)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (connections, engines)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def first_error_or_completions(outcomes: Sequence[Completion | BackendError]) -> list[Completion]:
    """The completions of :meth:`Backend.complete_each`, or its first error raised."""
    for outcome in outcomes:
        if isinstance(outcome, BackendError):
            raise outcome
    return list(outcomes)  # type: ignore[arg-type]
