"""A Gymnasium vector env whose sub-envs live in Ray actors, each actor one in-process vector env.

``RayVectorEnv("AgentWorld/MCP-v0", 1024, num_actors=8, backend={...})`` splits 1,024 sub-envs
into 8 actors of 128; each actor runs ``gym.make_vec`` of its 128 (the env's own batched vector
env where it has one, so one world-model call per actor per step). ``step`` sends every actor
its actions at once and gathers the results; observations, rewards and infos are those of one
in-process vector env of 1,024 given the same seeds and actions, whatever the number of actors.
``call``, ``get_attr``, ``set_attr`` and ``render`` are ``SyncVectorEnv``'s, each actor answering
for its block of sub-envs.

Example:
    >>> from agentworld_envs.distributed import RayVectorEnv
    >>> envs = RayVectorEnv("AgentFloor/A1-v0", 4, num_actors=2)  # doctest: +SKIP
    >>> obs, infos = envs.reset(seed=0)  # doctest: +SKIP
    >>> envs.close()  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import math
import numbers
from typing import Any

import numpy as np
from gymnasium import error
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from agentworld_envs.backends import Backend
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.distributed.actor_calls import ActorCalls
from agentworld_envs.distributed.fault_guard import fault_text
from agentworld_envs.distributed.layout import actor_blocks, check_layout, sub_env_seeds
from agentworld_envs.distributed.ray_runtime import connect
from agentworld_envs.distributed.vector_parts import overlay_info, place_info, split_batch
from agentworld_envs.distributed.worker import (
    ActorRestarted,
    StepFailed,
    VectorWorker,
    registered_spec,
)
from agentworld_envs.protocol.seeding import draw_seed
from agentworld_envs.sim.vector_info import batch_infos, info_at

__all__ = ["DEFAULT_ACTOR_OPTIONS", "RayVectorEnv"]

DEFAULT_ACTOR_OPTIONS = {"max_restarts": 3, "scheduling_strategy": "SPREAD"}
"""Ray restarts a dead actor up to 3 times; actors spread over the cluster's nodes."""
CLOSE_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 600.0
"""How long ``RayVectorEnv()`` waits for every actor to be placed and started by default."""
_RESOURCES = {"num_cpus": "CPU", "num_gpus": "GPU"}
"""Actor options that reserve cluster resources, and the resources' names."""


def _refuse_live_backends(env_kwargs: dict[str, Any]) -> None:
    for key, value in env_kwargs.items():
        if isinstance(value, Backend):
            raise TypeError(
                f"{key}= is a live {type(value).__name__}, which cannot travel to Ray actors: "
                "pass it as plain data (a name, or a config such as {'name': 'openai', "
                "'base_url': [...], 'model': ...}); each actor builds its own")


def _check_arguments(env_id: Any, actor_options: Any, ready_timeout_s: Any) -> None:
    """Refuse, before Ray starts, an ``env_id`` that is no registered id, ``actor_options`` that
    are no dict and a ``ready_timeout_s`` that is no number of seconds > 0."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a registered env id, got {env_id!r}")
    if ":" not in env_id:  # another package's id (module:Name-v0) may be the actors' alone
        registered_spec(env_id)
    if actor_options is not None and not isinstance(actor_options, dict):
        raise TypeError(f"actor_options must be a dict of Ray actor options, got "
                        f"{actor_options!r}")
    if isinstance(ready_timeout_s, bool) or not isinstance(ready_timeout_s, numbers.Real) or (
            not 0 < ready_timeout_s < math.inf):
        raise ValueError(f"ready_timeout_s must be a number of seconds > 0, got "
                         f"{ready_timeout_s!r}")


def _actors_that_fit(resources: dict[str, float], options: dict[str, Any]) -> int:
    """One actor per CPU, or as many as the CPUs and GPUs hold at the options' request each."""
    fit = int(resources.get("CPU", 1))
    for option, name in _RESOURCES.items():
        if options.get(option):
            fit = min(fit, int(resources.get(name, 0) // options[option]))
    return fit


class RayVectorEnv(ActorCalls, VectorEnv):
    """``num_envs`` sub-envs of ``env_id`` in ``num_actors`` Ray actors, stepped together.

    Runs on the connected Ray runtime (``ray.init(address=...)``), else starts a local one.
    Autoreset follows the actors' vector env (``metadata["autoreset_mode"]``: ``SAME_STEP``
    for ``AgentWorld/*``, ``NEXT_STEP`` for ``AgentFloor/*``). Misuse raises before any actor
    is called, as the in-process vector env raises: ``step`` before ``reset`` (with autoreset
    disabled, also before resetting the episodes that ended: ``ResetNeeded``), a wrong number
    of actions or a ``reset_mask`` not of shape ``(num_envs,)`` (``ValueError``), either after
    ``close()`` (``ClosedEnvironmentError``), as do bad arguments (``TypeError`` or
    ``ValueError``, before Ray is started).

    **As ``SyncVectorEnv``.** ``call(name, ...)``, ``get_attr(name)``, ``set_attr(name,
    values)`` and ``render()`` reach every sub-env through its actor's vector env and answer in
    sub-env order (:class:`~agentworld_envs.distributed.actor_calls.ActorCalls`: how errors and
    faults there are raised); ``render_mode`` and ``metadata`` are the actors' vector env's.

    **Seeds.** ``reset(seed=s)`` seeds sub-env i with ``s + i // group_size`` and ``np_random``
    with ``s``; a list of seeds seeds ``np_random`` from its integers. On a natively batched
    env, an option given as a list or tuple of ``num_envs`` entries is cut so each actor's
    vector env gets its sub-envs' entries (``scenario=[...]``: sub-env i plays entry i); sub-envs
    vectorised by Gymnasium get every option whole, as in ``SyncVectorEnv``.

    **Groups.** Consecutive groups of ``group_size`` sub-envs reset to the same task, variant or
    scenario, and live in one actor; on a simulated env each member samples the world model in
    its own stream (:class:`~agentworld_envs.sim.vector.AgentWorldVectorEnv`'s
    ``sampling_streams``). ``info["group"]`` is each sub-env's group. Group mates stay together
    past an autoreset: a member's k-th episode since the reset is seeded from the group's seed
    and k (:func:`~agentworld_envs.protocol.seeding.episode_seed`), so it plays the task its mates
    play in their k-th, however long each one's episodes were.

    **Faults cost one actor.** If an actor dies, or its vector env raises, Ray restarts it
    (``max_restarts``); its sub-envs are reset with seeds drawn from ``np_random`` and come back
    ``truncated`` with ``info["fault"]`` saying what happened (under ``SAME_STEP`` the step
    returns their new first observation, ``final_obs`` being the last one seen; under
    ``NEXT_STEP`` the next step does; with autoreset disabled they must be reset); the others
    never notice. A spent fault budget (the env's ``max_faults``) is not such a fault: the step
    raises ``TooManyFaultsError`` naming the actor, as one process does. Under ``NEXT_STEP`` a
    sub-env whose episode ended at the step before loses nothing: its step is its new episode's
    start (seeded from ``np_random``), as an autoreset step, not a second end. A masked reset
    that finds its actor restarted resets the actor's other sub-envs too, and their next step
    reports the fault. A sub-env vectorised by Gymnasium whose own ``step`` raises is truncated
    alone
    (:class:`~agentworld_envs.distributed.fault_guard.FaultGuard`). An actor whose restarts are
    spent raises ``RuntimeError``, and the other actors' results of that step are lost with
    it: the env can only be closed then. A ``reset`` that raises in one actor after others reset
    their sub-envs raises, and those sub-envs' next step reports their lost episodes. ``close()``
    kills every actor, then raises the first error a vector env's ``close`` raised.

    Args:
        env_id: A registered id (one that is not raises Gymnasium's error before Ray starts);
            ``module:Name-v0`` for ids registered by another package (the actors import it).
        num_envs: Sub-envs in all.
        num_actors: Actors; default one per CPU of the cluster (per ``num_cpus`` and
            ``num_gpus`` of ``actor_options``, where given), at most one per group.
        group_size: Sub-envs per GRPO group; must divide ``num_envs``.
        actor_options: Ray actor options over :data:`DEFAULT_ACTOR_OPTIONS` (``num_cpus``,
            ``num_gpus``, ``max_restarts``, ``scheduling_strategy``, ``runtime_env``, ...).
        ready_timeout_s: How long to wait for every actor to start; past it (e.g. the cluster
            cannot fit the actors' resource requests) ``RuntimeError``.
        **env_kwargs: ``gym.make_vec`` keyword arguments, as plain data: a backend is a name
            or a config that each actor builds (a live ``Backend`` raises ``TypeError``).
    """

    def __init__(self, env_id: str, num_envs: int, *, num_actors: int | None = None,
                 group_size: int = 1, actor_options: dict[str, Any] | None = None,
                 ready_timeout_s: float = READY_TIMEOUT_S, **env_kwargs: Any) -> None:
        self.actors: list[Any] = []
        _refuse_live_backends(env_kwargs)
        check_layout(num_envs, group_size, num_actors)
        _check_arguments(env_id, actor_options, ready_timeout_s)
        ray = connect()
        self._ray = ray
        self.env_id, self.num_envs, self.group_size = env_id, num_envs, group_size
        options = {**DEFAULT_ACTOR_OPTIONS, **(actor_options or {})}
        if num_actors is None:
            groups = num_envs // max(group_size, 1)
            num_actors = max(1, min(_actors_that_fit(ray.cluster_resources(), options), groups))
        self.blocks = actor_blocks(num_envs, num_actors, group_size)
        remote = ray.remote(VectorWorker).options(**options)
        self.actors = [remote.remote(env_id, len(b), env_kwargs,
                                     [i % group_size for i in b]) for b in self.blocks]
        try:
            observation_space, action_space, metadata, render_mode, self._cut_lists = (
                self._await_actors(options, ready_timeout_s))
        except BaseException:
            self._kill(self.actors)
            self.actors = []
            raise
        self.single_observation_space, self.single_action_space = observation_space, action_space
        self.observation_space = batch_space(observation_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)
        self._part_spaces = [batch_space(observation_space, len(b)) for b in self.blocks]
        self.metadata, self.render_mode = metadata, render_mode
        self._last = list(iterate(self.observation_space,
                                  create_empty_array(observation_space, num_envs)))
        """Each sub-env's last observation (blank until it is reset)."""
        self._ready = np.zeros(num_envs, np.bool_)
        """The sub-envs reset since ``__init__`` (with autoreset disabled, since their episode
        ended)."""
        self._fresh: dict[int, int | None] = {}
        """Sub-env: seed. Its next step starts a new episode with that seed instead (``NEXT_STEP``:
        after a fault was reported)."""
        self._faults: dict[int, tuple[str, int | None]] = {}
        """Sub-env: (fault, seed). A masked reset found its actor restarted: the next step ends its
        lost episode, saying ``fault``, and starts one with ``seed``."""
        self._due = np.zeros(num_envs, np.bool_)
        """``NEXT_STEP``: the sub-envs whose episode ended at the last step, so their next step
        starts a new one: a fault then loses no episode of theirs."""
        self._groups = np.arange(num_envs) // group_size

    def _await_actors(self, options: dict[str, Any], timeout_s: float) -> tuple[Any, ...]:
        """The first actor's :meth:`~VectorWorker.describe`, once every actor answers; an actor
        that could not start raises ``RuntimeError`` with its constructor's error in one line."""
        ray = self._ray
        refs = [actor.describe.remote() for actor in self.actors]
        _, waiting = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        if waiting:
            asked = {key: options[key] for key in (*_RESOURCES, "resources") if key in options}
            have = {name: ray.cluster_resources().get(name, 0) for name in _RESOURCES.values()}
            raise RuntimeError(
                f"{len(waiting)} of {len(refs)} actors did not start within {timeout_s:g} s: "
                f"each asks for {asked or 'no resources'} and the cluster has {have}; lower "
                "num_actors or actor_options, or add nodes")
        descriptions = []
        for k, ref in enumerate(refs):
            try:
                descriptions.append(ray.get(ref))
            except ray.exceptions.RayActorError as exc:  # e.g. a bad id or env kwarg
                raise RuntimeError(f"actor {k} could not make {self.env_id!r}: "
                                   f"{fault_text(exc)}") from exc
        return descriptions[0]

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``: actors with none of them
        are not called); other options go to every actor's vector env, per-sub-env lists cut
        to its sub-envs where it is natively batched."""
        self._check_open()
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_:
                raise TypeError(f"reset_mask must have dtype bool, got {mask.dtype}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask must have shape ({self.num_envs},), got "
                                 f"{mask.shape}")
        seeds = sub_env_seeds(seed, self.num_envs, self.group_size, self.np_random)
        self._seed_np_random(seed)
        refs, parts = {}, {}
        for k, (actor, block) in enumerate(zip(self.actors, self.blocks, strict=True)):
            part = {key: value[block.start:block.stop] if self._per_sub_env(value) else value
                    for key, value in options.items()}
            if mask is not None:
                part["reset_mask"] = mask[block.start:block.stop]
                if not part["reset_mask"].any():  # an actor with none to reset is left alone
                    continue
            parts[k] = part
            refs[k] = self._reset_call(actor, seeds[block.start:block.stop], part)
        infos: list[dict[str, Any]] = [{} for _ in self.blocks]
        done, failure = {}, None
        for k, ref in refs.items():  # every answer is taken: a failure must not hide a reset
            block = self.blocks[k]
            try:
                try:
                    observations, infos[k] = self._get(k, ref)
                except ActorRestarted:
                    observations, infos[k] = self._reset_restarted(
                        k, seeds[block.start:block.stop], parts[k])
            except Exception as exc:  # noqa: BLE001 - raised below, once all are taken
                failure = failure or exc
                continue
            items = list(iterate(self._part_spaces[k], observations))
            for j in range(len(block)) if mask is None else np.flatnonzero(mask[block]):
                done[block.start + j] = items[j]
        if failure:
            self._lose_reset_episodes(list(done), seeds, str(failure).splitlines()[0])
            raise failure
        for i, item in done.items():
            self._last[i], self._ready[i], self._due[i] = item, True, False
            self._fresh.pop(i, None)
            self._faults.pop(i, None)
        return self._observations(), self._info(infos)

    def _lose_reset_episodes(self, reset: list[int], seeds: list[int | None],
                             cause: str) -> None:
        """A reset that raised in some actor reset sub-envs ``reset`` in the others: their
        episodes are lost, so the next step reports them (as a restarted actor's) and starts
        the ones they were reset to."""
        fault = f"reset() reset this sub-env, then raised: {cause}"
        for i in reset:
            self._fresh.pop(i, None)
            self._faults.pop(i, None)
            if self._due[i]:  # its new episode starts at its next step anyway
                self._fresh[i] = seeds[i]
            elif self._ready[i]:
                self._faults[i] = (fault, seeds[i])

    def _per_sub_env(self, value: Any) -> bool:
        """Whether ``value`` is an option to cut into the actors' parts."""
        return self._cut_lists and isinstance(value, list | tuple) and len(value) == self.num_envs

    def _seed_np_random(self, seed: int | list[int | None] | None) -> None:
        if isinstance(seed, int | np.integer):
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        elif seed is not None and any(s is not None for s in seed):
            self.np_random = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                [int(s) for s in seed if s is not None])))

    def _reset_restarted(self, k: int, seeds: list[int | None],
                         options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Actor k's masked reset, on the actor restarted: reset whole (seeds from
        ``np_random``) first; its other sub-envs' next step reports their lost episodes."""
        block, fault = self.blocks[k], f"actor {k} was restarted and lost its episodes"
        drawn = sub_env_seeds(draw_seed(self.np_random), len(block), self.group_size, None)
        self._get(k, self._reset_call(self.actors[k], drawn, {}))
        for j, i in enumerate(block):
            if self._due[i]:  # its new episode starts at its next step, with this seed
                self._fresh.setdefault(i, drawn[j])
            elif self._ready[i] and i not in self._faults:
                self._faults[i] = (fault, drawn[j])
        return self._get(k, self._reset_call(self.actors[k], seeds, options))

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every actor at once; gather; recover the actors that failed."""
        self._check_open()
        if not self._ready.all():
            raise error.ResetNeeded(f"call reset() before step(): sub-envs "
                                    f"{np.flatnonzero(~self._ready).tolist()} are not reset")
        actions = split_batch(self.action_space, self.single_action_space, actions, self.blocks)
        fresh = dict(self._fresh)
        if self.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP:
            fresh.update({i: seed for i, (_, seed) in self._faults.items()})
        refs = [actor.step.remote(actions[k], {i - block.start: seed for i, seed in fresh.items()
                                              if i in block})
                for k, (actor, block) in enumerate(zip(self.actors, self.blocks, strict=True))]
        parts, spent = [], None
        for k, ref in enumerate(refs):  # every answer is taken, so Ray logs no unread error
            try:
                parts.append(self._gather(k, ref))
            except TooManyFaultsError as exc:
                spent = spent or exc
        if spent:
            raise spent
        self._fresh = {i: seed for i, seed in self._fresh.items() if i not in fresh}
        items = [item for space, part in zip(self._part_spaces, parts, strict=True)
                 for item in iterate(space, part[0])]
        rewards, terminated, truncated = (np.concatenate([part[i] for part in parts])
                                          for i in (1, 2, 3))
        info = self._info([part[4] for part in parts])
        faults, self._faults = self._faults, {}
        if faults:
            info = self._end_lost_episodes(faults, items, (rewards, terminated, truncated), info)
        self._last = items
        if self.metadata["autoreset_mode"] is AutoresetMode.DISABLED:  # the caller resets them
            self._ready &= ~(terminated | truncated)
        elif self.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP:
            self._due = terminated | truncated
        for i in np.flatnonzero(info.get("_final_obs", ())):  # not a view into Ray's object
            info["final_obs"][i] = copy.deepcopy(info["final_obs"][i])  # store: read-only
        return self._observations(), rewards, terminated, truncated, info

    def _end_lost_episodes(self, faults: dict[int, tuple[str, int | None]], items: list[Any],
                           ends: tuple[np.ndarray, ...], info: dict[str, Any]) -> dict[str, Any]:
        """The step's results with each faulted sub-env's episode truncated (reward 0), as the
        autoreset mode has it: the new episode's start now (``SAME_STEP``: ``items`` holds it),
        else the last observation now (and, under ``NEXT_STEP``, the new episode at the next
        step)."""
        rewards, terminated, truncated = ends
        mode, where = self.metadata["autoreset_mode"], np.zeros(self.num_envs, np.bool_)
        fault_infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for i, (fault, seed) in faults.items():
            rewards[i], terminated[i], truncated[i], where[i] = 0.0, False, True, True
            if mode is AutoresetMode.SAME_STEP:
                fault_infos[i] = {**info_at(info, i), "fault": fault, "final_obs": self._last[i],
                                  "final_info": {"fault": fault}}
                continue
            items[i], fault_infos[i] = self._last[i], {"fault": fault}
            if mode is AutoresetMode.NEXT_STEP:
                self._fresh[i] = seed
        return self._grouped(overlay_info(info, batch_infos(fault_infos, self.num_envs), where))

    def _gather(self, k: int, ref: Any) -> tuple[Any, ...]:
        """Actor k's step; on a fault, its sub-envs freshly reset (and their faults noted)."""
        ray = self._ray
        try:
            return ray.get(ref)
        except TooManyFaultsError as exc:  # a spent fault budget stops the run, as in one process
            raise self._raised(k, exc.cause, "step()") from exc.cause
        except ActorRestarted:
            fault = f"actor {k} was restarted and lost its episodes"
        except StepFailed as exc:
            fault = f"actor {k} failed: {exc.cause}"
        except ray.exceptions.RayActorError as exc:
            fault = f"actor {k} died: {fault_text(exc)}"
        except ray.exceptions.RayError as exc:  # e.g. a result lost with its node
            fault = f"actor {k} failed: {fault_text(exc)}"
        block = self.blocks[k]
        seeds = sub_env_seeds(draw_seed(self.np_random), len(block), self.group_size, None)
        observations, info = self._get(k, self._reset_call(self.actors[k], seeds, {}))
        for j, i in enumerate(block):
            self._fresh.pop(i, None)
            if not self._due[i]:  # else this step is its new episode's start, as autoreset has it
                self._faults[i] = (fault, seeds[j])
        n = len(block)
        return observations, np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_), info

    def _reset_call(self, actor: Any, seeds: list[int | None], options: dict[str, Any]) -> Any:
        """A reset that Ray retries through the actor's restart."""
        return actor.reset.options(max_task_retries=-1).remote(seeds, options)

    def _get(self, k: int, ref: Any) -> Any:
        """Actor k's reset; an error its vector env raised is raised again by its type, in one
        line naming the actor (as ``call`` raises it)."""
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            raise self._raised(k, exc.cause, "reset()") from exc.cause
        except self._ray.exceptions.ActorDiedError as exc:
            raise RuntimeError(f"actor {k} died and Ray cannot restart it (max_restarts spent "
                               f"or its node lost): {fault_text(exc)}") from exc

    def __reduce__(self) -> tuple[Any, ...]:
        """Refused: the actors are this env's alone (a copy sharing them would kill them on
        close) and a new set is a new env."""
        raise TypeError("a RayVectorEnv cannot be copied or pickled: its Ray actors are its "
                        "own; make another RayVectorEnv with the same arguments")

    def _check_open(self) -> None:
        if self.closed:
            raise error.ClosedEnvironmentError("the RayVectorEnv is closed")

    def _observations(self) -> Any:
        """Every sub-env's last observation, as a new batch."""
        return concatenate(self.single_observation_space, self._last,
                           create_empty_array(self.single_observation_space, self.num_envs))

    def _info(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """The actors' infos as one vector info, with each sub-env's group."""
        info: dict[str, Any] = {}
        for block, part in zip(self.blocks, parts, strict=True):
            place_info(info, part, block.start, self.num_envs)
        return self._grouped(info)

    def _grouped(self, info: dict[str, Any]) -> dict[str, Any]:
        info["group"], info["_group"] = self._groups.copy(), np.ones(self.num_envs, np.bool_)
        return info

    def close_extras(self, **kwargs: Any) -> None:
        """Close every actor's vector env (waiting at most ``CLOSE_TIMEOUT_S``), then kill it;
        with Ray shut down already, only forget them. An error a vector env's ``close`` raised
        is raised again (as ``SyncVectorEnv.close`` raises it), naming its actor, once every
        actor is killed."""
        actors, self.actors = self.actors, []
        if not actors or not self._ray.is_initialized():
            return
        refs = {}
        for k, actor in enumerate(actors):
            try:
                refs[k] = actor.close.remote()
            except Exception:  # noqa: BLE001, S112 - gone already: nothing to close
                continue
        try:
            ready, _ = self._ray.wait(list(refs.values()), num_returns=len(refs),
                                      timeout=CLOSE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - the kills below end them anyway
            ready = []
        failure = None
        for k, ref in refs.items():
            try:
                if ref in ready:
                    self._ray.get(ref)
            except self._ray.exceptions.RayTaskError as exc:  # the vector env's close raised
                failure = failure or (self._raised(k, exc.cause, "close()"), exc.cause)
            except self._ray.exceptions.RayError:  # noqa: S110 - dead already: nothing to close
                pass
        self._kill(actors)
        if failure:
            raise failure[0] from failure[1]

    def _kill(self, actors: list[Any]) -> None:
        for actor in actors:
            try:
                self._ray.kill(actor)
            except Exception:  # noqa: BLE001, S110 - gone already: nothing left behind
                pass
