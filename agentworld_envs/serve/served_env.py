"""What one server serves: the env ids behind its id, and the parts its sessions share.

An ``AgentWorld/*`` id gets one world model for the whole server: the backend is built once
(the embedded model loads once, not once per session) and wrapped in a
:class:`~agentworld_envs.backends.batching.BatchingBackend`, so that sessions stepping at the
same time reach the model as one batched call. Every session's env is a plain ``gym.make`` of
the id with that shared backend, so a session plays exactly what a lone in-process env plays.
A session's env reaches the shared backends through its :class:`SessionBackend`, so that
closing the session (its client left, or it was closed or swept) cancels the session's model
calls in flight, and no other session's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion, make_backend
from agentworld_envs.backends.base import first_error_or_completions
from agentworld_envs.backends.batching import BatchingBackend
from agentworld_envs.backends.cancelling import CallScope, current_scope, stopped_with
from agentworld_envs.backends.registry import budget_defaults
from agentworld_envs.backends.replay import RecordingBackend
from agentworld_envs.serve.settings import ServeSettings

__all__ = ["ServedEnv", "SessionBackend", "resolve_env_ids"]

_FLOOR = "AgentFloor/"
_WORLD = "AgentWorld/"
_FLOOR_KWARGS = frozenset({"variant", "max_episode_steps", "reveal_reference"})


def resolve_env_ids(env_id: str) -> tuple[str, ...]:
    """The registered Gymnasium ids an id stands for: itself, or a task set's members.

    Example:
        >>> resolve_env_ids("AgentFloor/tier:A0")[:2]
        ('AgentFloor/A01-v0', 'AgentFloor/A02-v0')
        >>> len(resolve_env_ids("AgentFloor/all"))
        30

    Raises:
        ValueError: naming the ids that can be served, when ``env_id`` is none of them.
    """
    import agentworld_envs  # noqa: F401 - registers AgentWorld/*
    import floor_tasks
    from floor_tasks.task import TIERS

    if env_id.startswith(_FLOOR) and not env_id.endswith("-v0"):
        selector = env_id.removeprefix(_FLOOR)
        if selector == "all":
            return tuple(map(floor_tasks.env_id, floor_tasks.TASK_IDS))
        tiers = [t.strip() for t in selector.removeprefix("tier:").split(",") if t.strip()]
        if selector.startswith("tier:") and tiers and set(tiers) <= set(TIERS):
            return tuple(floor_tasks.env_id(task.id) for task in floor_tasks.load_tasks()
                         if task.tier in tiers)
        raise ValueError(f"unknown task set {env_id!r}: use AgentFloor/all or "
                         f"AgentFloor/tier:A,B (tiers {', '.join(TIERS)})")
    if env_id.startswith((_FLOOR, _WORLD)) and env_id in gym.registry:
        return (env_id,)
    raise ValueError(f"{env_id!r} is not an env this server can serve: AgentFloor/<ID>-v0, "
                     "AgentWorld/<Domain>-v0, AgentFloor/all or AgentFloor/tier:A,B "
                     "(see: agentworld floor list, agentworld sim list)")


class SessionBackend(Backend):
    """One session's way to a shared backend: its calls are cancelled when ``departure`` is
    (the session closed), or when their caller cancels them; other sessions' calls go on.

    Args:
        shared: The server's backend, shared by every session (closed by the server).
        departure: Cancelled once the session closes, for good.
    """

    cancels_each_call = True

    def __init__(self, shared: BatchingBackend, departure: CallScope) -> None:
        self.shared, self.departure = shared, departure
        self.name, self.blocking = shared.name, shared.blocking

    def describe(self) -> dict[str, Any]:
        """The shared backend's description."""
        return self.shared.describe()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """:meth:`complete_each`, its first error raised."""
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """The shared backend's call, in a scope of its own that the caller's scope and the
        session's departure both cancel."""
        call = CallScope()
        with stopped_with(current_scope(), call.cancel), self.departure.on_cancel(call.cancel), \
                call.bound():
            return self.shared.complete_each(requests)


class ServedEnv:
    """The env ids of a server and the parts its sessions share.

    Args:
        settings: What to serve and how.
    """

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.env_ids = resolve_env_ids(settings.env_id)
        self.simulated = self.env_ids[0].startswith(_WORLD)
        self.world_model: BatchingBackend | None = None
        self.judge: BatchingBackend | None = None
        self._lock = threading.Lock()
        self._counts = {"sessions_opened": 0, "sessions_closed": 0, "steps": 0, "running": 0}
        self.make_kwargs = self._shared_kwargs(dict(settings.env_kwargs))
        """What every session passes to ``gym.make`` (the live shared backends included)."""
        self.make(self.env_ids[0]).close()  # a bad setting fails now, before the port opens

    @property
    def blocking(self) -> bool:
        """Whether a step may wait on a model (else it is quick and runs on the event loop)."""
        return any(backend is not None and backend.blocking
                   for backend in (self.world_model, self.judge))

    @property
    def task_set(self) -> bool:
        """Whether the id names several envs, among which each reset picks one."""
        return len(self.env_ids) > 1

    def _shared_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if not self.simulated:
            if self.settings.backend is not None:
                raise ValueError("AgentFloor envs run real tools and no world model: --backend "
                                 "applies to AgentWorld envs only")
            unknown = set(kwargs) - _FLOOR_KWARGS
            if unknown:
                raise ValueError(f"unknown AgentFloor env setting(s) {sorted(unknown)}; "
                                 f"known: {sorted(_FLOOR_KWARGS)}")
            return kwargs
        from agentworld_envs.sim.config import SimConfig

        if self.settings.backend is not None:
            kwargs["backend"] = self.settings.backend
        domain = gym.spec(self.env_ids[0]).kwargs["domain"]
        config = SimConfig(domain=domain, **{k: v for k, v in kwargs.items()
                                             if k in SimConfig.model_fields})
        record_path = kwargs.pop("record_path", None)
        if config.mode != "real":
            sampling = config.world_model_params().to_dict()
            sampling.pop("seed")  # each episode draws its own from np_random
            self.world_model = self._shared(config.world_model_backend(), record_path,
                                            config.timeout_s)
            kwargs.update(backend=self.world_model, sampling=sampling)
        if config.judge_backend is not None:
            self.judge = self._shared(config.judge_backend, record_path, config.timeout_s)
            kwargs["judge_backend"] = self.judge
        return kwargs

    def _shared(self, spec: str | dict[str, Any] | Backend, record_path: str | None,
                timeout_s: float | None) -> BatchingBackend:
        inner = make_backend(spec, budget_defaults(spec, timeout_s))  # shared by attempts
        if record_path:  # one recorder for every session: one writer of the file
            inner = RecordingBackend(inner, record_path)
        return BatchingBackend(inner, self.settings.batch_window_s)

    def make(self, env_id: str, departure: CallScope | None = None) -> gym.Env:
        """A new env of one of the served ids, on the shared backends (a session's, through
        its :class:`SessionBackend` on ``departure``)."""
        kwargs = dict(self.make_kwargs)
        if env_id.startswith(_FLOOR):
            kwargs.pop("reveal_reference", None)  # the session reveals, from the solutions
        if departure is not None:
            for key, shared in (("backend", self.world_model), ("judge_backend", self.judge)):
                if shared is not None:
                    kwargs[key] = SessionBackend(shared, departure)
        return gym.make(env_id, **kwargs)

    def count(self, key: str, by: int = 1) -> None:
        """Add to a counter of :meth:`stats` (``running``: resets and steps running now)."""
        with self._lock:
            self._counts[key] += by

    def stats(self) -> dict[str, Any]:
        """Sessions opened and closed, steps played, and the world model's batches."""
        with self._lock:
            counts = dict(self._counts)
        counts["sessions_open"] = counts["sessions_opened"] - counts["sessions_closed"]
        if self.world_model is not None:
            counts["world_model"] = self.world_model.stats()
        return counts

    def join(self) -> None:
        """A session's episode began: batches wait for its calls (within their window)."""
        if self.world_model is not None:
            self.world_model.join()

    def leave(self) -> None:
        """A session's episode ended, or the session closed."""
        if self.world_model is not None:
            self.world_model.leave()

    def stepping(self) -> Any:
        """A context in which a session steps (see :meth:`BatchingBackend.stepping`)."""
        return self.world_model.stepping() if self.world_model else contextlib.nullcontext()

    def close(self) -> None:
        """Close the shared backends."""
        for backend in (self.world_model, self.judge):
            if backend is not None:
                backend.close()
