"""``SyncVectorEnv``'s ``call``, ``get_attr``, ``set_attr`` and ``render`` for
:class:`~agentworld_envs.distributed.RayVectorEnv`: every actor answers for its block of
sub-envs (through its own vector env's method), and the answers are put back in sub-env order.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from agentworld_envs.distributed.fault_guard import fault_text
from agentworld_envs.sim.vector import sub_env_values

__all__ = ["ActorCalls"]


def _named(cause: BaseException, where: str) -> BaseException:
    """``cause``'s type, its message led by ``where`` (as ``AsyncVectorEnv`` raises a worker's
    error again by its type), or ``RuntimeError`` if that type takes more than a message."""
    message = f"{where}: {fault_text(cause)}"
    try:
        return type(cause)(message)
    except Exception:  # noqa: BLE001 - a constructor of its own: the message still says it all
        return RuntimeError(message)


def _joined(answers: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The actors' tuples as one, in sub-env order."""
    return tuple(item for answer in answers for item in answer)


class ActorCalls:
    """The four methods, for a vector env with ``_ray``, ``actors``, ``blocks`` (actor k's
    sub-envs), ``_ready`` (the sub-envs that have episodes), ``num_envs`` and ``_check_open``.

    An error that the actor's vector env raises is raised again with its type, its message
    naming the actor (as ``AsyncVectorEnv`` raises a worker's). An actor that Ray restarted
    since it had episodes raises ``RuntimeError`` (``ActorRestarted``) rather than answer for
    fresh sub-envs, and the next step reports its lost episodes; one dead for good raises
    ``RuntimeError`` too.
    """

    _ray: Any
    actors: list[Any]
    blocks: list[range]
    _ready: np.ndarray
    num_envs: int

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Each sub-env's ``name``, called with the arguments if callable, in sub-env order."""
        return _joined(self._forward("call", (name, *args), kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Each sub-env's attribute ``name`` (called if callable), in sub-env order."""
        return _joined(self._forward("get_attr", (name,)))

    def set_attr(self, name: str, values: Any) -> None:
        """Set each sub-env's attribute ``name``: one value for all, or a list or tuple of
        ``num_envs`` values (another length raises ``ValueError`` before any actor is called)."""
        self._check_open()
        self._forward("set_attr", (name,), values=sub_env_values(values, self.num_envs))

    def render(self) -> tuple[Any, ...]:
        """Each sub-env's render, in sub-env order."""
        return _joined(self._forward("render"))

    def _forward(self, method: str, args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None, values: list[Any] | None = None
                 ) -> list[Any]:
        """Every actor's vector env's ``method(*args, **kwargs)`` at once (``values`` cut to
        the actor's sub-envs as a last argument), one answer per actor: the caller's own
        objects, never read-only views into Ray's object store. An actor restarted since it
        had episodes raises rather than answer for fresh sub-envs."""
        self._check_open()
        refs = [actor.forward.options(max_task_retries=-1).remote(  # through a restart
                    method, args if values is None else (*args, values[block.start:block.stop]),
                    kwargs or {}, bool(self._ready[block].any()))
                for actor, block in zip(self.actors, self.blocks, strict=True)]
        where = f"{method}({args[0]!r})" if args else f"{method}()"
        ray, answers, failure = self._ray, [], None
        for k, ref in enumerate(refs):  # every answer is taken, so Ray logs no unread error
            try:
                answers.append(copy.deepcopy(ray.get(ref)))
            except ray.exceptions.RayTaskError as exc:  # the vector env raised
                failure = failure or (self._raised(k, exc.cause, where), exc.cause)
            except ray.exceptions.RayError as exc:  # e.g. dead, its restarts spent
                failure = failure or (RuntimeError(f"actor {k} failed during {where}: "
                                                   f"{fault_text(exc)}"), exc)
        if failure:
            raise failure[0] from failure[1]
        return answers

    def _raised(self, k: int, cause: BaseException, where: str) -> BaseException:
        """``cause``, raised in actor k's vector env during ``where``, as the error to raise:
        its type, one line naming the actor and its sub-envs."""
        block = self.blocks[k]
        return _named(cause, f"actor {k} (sub-envs {block.start}-{block.stop - 1}), {where}")
