"""What one Ray actor runs: one in-process vector env (``gym.make_vec``) over its sub-envs.

A plain class; :class:`~agentworld_envs.distributed.RayVectorEnv` makes it an actor.
"""

from __future__ import annotations

import importlib
import inspect
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import VectorizeMode, load_env_creator
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.distributed.fault_guard import FaultGuard, fault_text
from agentworld_envs.distributed.group_episodes import GroupEpisodes
from agentworld_envs.distributed.vector_parts import overlay_info

__all__ = ["ActorRestarted", "StepFailed", "VectorWorker", "make_vector", "registered_spec"]

_REGISTERING = ("agentworld_envs", "floor_tasks")
"""Packages whose import registers env ids: the gymnasium registry does not travel to actors."""


class ActorRestarted(RuntimeError):
    """Stepped, or reset in part, before any whole reset: Ray restarted the actor (or it is new)
    and its episodes were lost."""


class StepFailed(RuntimeError):
    """The vector env's ``step`` raised (``Type: message``); the actor has rebuilt it.

    Made from its message alone, so Ray can carry it to the driver whatever the original
    exception's constructor takes.
    """


def _takes(entry_point: Any, name: str) -> bool:
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return name in inspect.signature(creator).parameters


def _add_info_as_is(num_envs: int, infos: dict[str, Any], info: dict[str, Any],
                    index: int) -> dict[str, Any]:
    """``VectorEnv._add_info`` that keeps every value as it is, in an object array: the driver
    types each key as one vector env of all the sub-envs would (from the first sub-env that
    holds it), not from the first of this actor's."""
    for key, value in info.items():
        if isinstance(value, dict):
            infos[key] = _add_info_as_is(num_envs, infos.get(key, {}), value, index)
        else:
            infos.setdefault(key, np.full(num_envs, None, dtype=object))[index] = value
        infos.setdefault(f"_{key}", np.zeros(num_envs, dtype=np.bool_))[index] = True
    return infos


def registered_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The spec of ``env_id`` once the packages that register ids are imported, and ``module``
    of ``module:Name-v0``; Gymnasium's error for an id that is not registered."""
    for package in _REGISTERING:
        importlib.import_module(package)
    module, _, name = env_id.rpartition(":")
    if module:
        importlib.import_module(module)
    return gym.spec(name)


def make_vector(env_id: str, num_envs: int, env_kwargs: dict[str, Any],
                sampling_streams: list[int]) -> VectorEnv:
    """``gym.make_vec(env_id, num_envs, **env_kwargs)`` in this process.

    ``module:Name-v0`` imports ``module`` first (for ids registered outside this project). A
    natively batched env gets ``sampling_streams`` where it takes them (when any is not 0: GRPO
    groups); sub-envs vectorised by Gymnasium get a :class:`FaultGuard` each, and with groups a
    :class:`GroupEpisodes`, and their infos are batched with every value as it is
    (:func:`_add_info_as_is`).
    """
    spec, kwargs = registered_spec(env_id), dict(env_kwargs)
    name = env_id.rpartition(":")[2]
    mode = kwargs.get("vectorization_mode")
    native = spec.vector_entry_point is not None and (
        mode is None or VectorizeMode(mode) is VectorizeMode.VECTOR_ENTRY_POINT)
    if not native:
        grouped = [GroupEpisodes] if any(sampling_streams) else []
        kwargs["wrappers"] = [*kwargs.get("wrappers", ()), FaultGuard, *grouped]
    elif any(sampling_streams) and _takes(spec.vector_entry_point, "sampling_streams"):
        kwargs["sampling_streams"] = sampling_streams
    envs = gym.make_vec(name, num_envs=num_envs, **kwargs)
    if not native:
        envs.unwrapped._add_info = partial(_add_info_as_is, num_envs)
    return envs


class VectorWorker:
    """One actor's sub-envs: :func:`make_vector`'s env, reset and stepped on the driver's call.

    A step that raises rebuilds the vector env and raises :class:`StepFailed`; a restarted
    actor's first step or masked reset raises :class:`ActorRestarted`. Either way the driver
    resets it whole. A spent fault budget (``TooManyFaultsError``) is raised as it is: the run
    stops.
    """

    def __init__(self, env_id: str, num_envs: int, env_kwargs: dict[str, Any],
                 sampling_streams: list[int]) -> None:
        self._make = partial(make_vector, env_id, num_envs, env_kwargs, sampling_streams)
        self.envs = self._make()
        self._started = False

    def describe(self) -> tuple[gym.Space, gym.Space, dict[str, Any], str | None, bool]:
        """The single observation and action spaces, the metadata (its autoreset mode set), the
        render mode, and whether the vector env is natively batched (so it may give each sub-env
        its entry of a list option; Gymnasium's pass every option whole to each sub-env)."""
        metadata = dict(self.envs.metadata)
        metadata.setdefault("autoreset_mode", AutoresetMode.NEXT_STEP)
        native = not isinstance(self.envs.unwrapped, SyncVectorEnv | AsyncVectorEnv)
        return (self.envs.single_observation_space, self.envs.single_action_space, metadata,
                self.envs.render_mode, native)

    def forward(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                started: bool = False) -> Any:
        """The vector env's ``call``, ``get_attr``, ``set_attr`` or ``render``; ``started``:
        the driver has episodes here, which a restarted actor lost (:class:`ActorRestarted`)."""
        if started and not self._started:
            raise ActorRestarted("the actor was restarted and lost its episodes")
        return getattr(self.envs, method)(*args, **kwargs)

    def reset(self, seeds: list[int | None], options: dict[str, Any]) -> tuple[Any, dict]:
        """``reset`` of the vector env, sub-env j seeded with ``seeds[j]``; a masked reset
        needs a vector env reset whole before."""
        if "reset_mask" in options and not self._started:
            raise ActorRestarted("the actor was restarted and lost its episodes")
        result = self.envs.reset(seed=seeds, options=options)
        self._started = True
        return result

    def step(self, actions: Any, fresh: dict[int, int | None] | None = None) -> tuple[Any, ...]:
        """``step`` of the vector env, then a masked reset of sub-envs ``fresh`` (index: seed),
        whose step results it drops: theirs is the new episode's start (reward 0, not ended,
        the reset's observation and info), as a ``NEXT_STEP`` autoreset gives. With every
        sub-env fresh, only the reset."""
        fresh, n = fresh or {}, self.envs.num_envs
        if len(fresh) == n:  # none to step
            observations, info = self.reset([fresh[j] for j in range(n)], {})
            return observations, np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_), info
        if not self._started:
            raise ActorRestarted("the actor was restarted and lost its episodes")
        mask = np.isin(np.arange(n), list(fresh))
        try:
            observations, rewards, terminated, truncated, info = self.envs.step(actions)
            if fresh:
                new, new_info = self.envs.reset(seed=[fresh.get(j) for j in range(n)],
                                                options={"reset_mask": mask})
        except TooManyFaultsError:  # the user's fault budget is spent: the run stops
            raise
        except Exception as exc:
            self._started = False
            self.envs.close()
            self.envs = self._make()
            raise StepFailed(fault_text(exc)) from exc
        if not fresh:
            return observations, rewards, terminated, truncated, info
        space = self.envs.observation_space
        items = [b if m else a for a, b, m in zip(iterate(space, observations),
                                                  iterate(space, new), mask, strict=True)]
        observations = concatenate(self.envs.single_observation_space, items,
                                   create_empty_array(self.envs.single_observation_space, n))
        return (observations, np.where(mask, 0.0, rewards), terminated & ~mask,
                truncated & ~mask, overlay_info(info, new_info, mask))

    def close(self) -> None:
        """Close the vector env."""
        self.envs.close()
