"""Gymnasium's ``AsyncVectorEnv`` worker, with every error it sends back made transportable.

Gymnasium's worker puts a failing env's error on a queue, pickled, and the parent raises
``type(error)(error)``. An error that cannot be pickled was never delivered (the parent waited
for it forever); one whose class needs more than its message reached the caller as a
``TypeError`` and lost its message. The suite's own errors and envs avoid both
(:mod:`agentworld_envs.errors`); this worker covers whatever else runs in the worker (your
wrappers, another library's env), sending such an error as a
:class:`~agentworld_envs.errors.SubEnvError` with its type's name, message and traceback.

Example:
    >>> import gymnasium as gym, agentworld_envs
    >>> envs = gym.make_vec("AgentWorld/MCP-v0", num_envs=2, vectorization_mode="async",
    ...                     vector_kwargs={"shared_memory": False, "worker": async_worker},
    ...                     backend="scripted")
    >>> len(envs.reset(seed=0)[0])
    2
    >>> envs.close()
"""

from __future__ import annotations

from typing import Any

from gymnasium.vector.async_vector_env import _async_worker

from agentworld_envs.errors import transportable

__all__ = ["async_worker"]


class _TransportingQueue:
    """The worker's error queue, each error made :func:`transportable` before it is put."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def put(self, item: tuple[int, type, BaseException, str]) -> None:
        index, _, error, trace = item
        moved = transportable(error)
        self._queue.put((index, type(moved), moved, trace))


def async_worker(index: int, env_fn: Any, pipe: Any, parent_pipe: Any, shared_memory: Any,
                 error_queue: Any, *rest: Any) -> None:
    """Gymnasium's own worker (same arguments: ``rest`` is the autoreset mode and, since
    Gymnasium 1.3, the concurrency semaphore), its errors sent as :func:`transportable` makes
    them; pass it as ``vector_kwargs={"worker": async_worker}``."""
    _async_worker(index, env_fn, pipe, parent_pipe, shared_memory,
                  _TransportingQueue(error_queue), *rest)
