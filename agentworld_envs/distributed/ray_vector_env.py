"""A Gymnasium vector env whose sub-envs live in Ray actors, each actor one in-process vector env.

``RayVectorEnv("AgentWorld/MCP-v0", 1024, num_actors=8, backend={...})`` splits 1,024 sub-envs
into 8 actors of 128; each actor runs ``gym.make_vec`` of its 128 (the env's own batched vector
env where it has one, so one world-model call per actor per step). ``step`` sends every actor
its actions at once and gathers the results; observations, rewards and infos are those of one
in-process vector env of 1,024 given the same seeds and actions, whatever the number of actors.

Example:
    >>> from agentworld_envs.distributed import RayVectorEnv
    >>> envs = RayVectorEnv("AgentFloor/A1-v0", 4, num_actors=2)  # doctest: +SKIP
    >>> obs, infos = envs.reset(seed=0)  # doctest: +SKIP
    >>> envs.close()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, create_empty_array

from agentworld_envs.backends import Backend
from agentworld_envs.distributed.fault_guard import fault_text
from agentworld_envs.distributed.layout import actor_blocks, sub_env_seeds
from agentworld_envs.distributed.ray_runtime import connect
from agentworld_envs.distributed.vector_parts import join_batches, place_info, split_batch
from agentworld_envs.distributed.worker import ActorRestarted, StepFailed, VectorWorker
from agentworld_envs.protocol.seeding import draw_seed
from agentworld_envs.sim.vector_info import batch_infos

__all__ = ["DEFAULT_ACTOR_OPTIONS", "RayVectorEnv"]

DEFAULT_ACTOR_OPTIONS = {"max_restarts": 3, "scheduling_strategy": "SPREAD"}
"""Ray restarts a dead actor up to 3 times; actors spread over the cluster's nodes."""
CLOSE_TIMEOUT_S = 10.0


def _refuse_live_backends(env_kwargs: dict[str, Any]) -> None:
    for key, value in env_kwargs.items():
        if isinstance(value, Backend):
            raise TypeError(
                f"{key}= is a live {type(value).__name__}, which cannot travel to Ray actors: "
                "pass it as plain data (a name, or a config such as {'name': 'openai', "
                "'base_url': [...], 'model': ...}); each actor builds its own")


class RayVectorEnv(VectorEnv):
    """``num_envs`` sub-envs of ``env_id`` in ``num_actors`` Ray actors, stepped together.

    Runs on the connected Ray runtime (``ray.init(address=...)``), else starts a local one.
    Autoreset follows the actors' vector env (``metadata["autoreset_mode"]``: ``SAME_STEP``
    for ``AgentWorld/*``, ``NEXT_STEP`` for ``AgentFloor/*``).

    **Seeds.** ``reset(seed=s)`` seeds sub-env i with ``s + i // group_size``.

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
    ``NEXT_STEP`` the next step does); the others never notice. A sub-env vectorised by
    Gymnasium whose own ``step`` raises is truncated alone
    (:class:`~agentworld_envs.distributed.fault_guard.FaultGuard`). An actor whose restarts are
    spent raises ``RuntimeError``. ``close()`` kills every actor.

    Args:
        env_id: A registered id; ``module:Name-v0`` for ids registered by another package
            (the actors import it).
        num_envs: Sub-envs in all.
        num_actors: Actors; default one per CPU of the cluster, at most one per group.
        group_size: Sub-envs per GRPO group; must divide ``num_envs``.
        actor_options: Ray actor options over :data:`DEFAULT_ACTOR_OPTIONS` (``num_cpus``,
            ``num_gpus``, ``max_restarts``, ``scheduling_strategy``, ``runtime_env``, ...).
        **env_kwargs: ``gym.make_vec`` keyword arguments, as plain data: a backend is a name
            or a config that each actor builds (a live ``Backend`` raises ``TypeError``).
    """

    def __init__(self, env_id: str, num_envs: int, *, num_actors: int | None = None,
                 group_size: int = 1, actor_options: dict[str, Any] | None = None,
                 **env_kwargs: Any) -> None:
        self.actors: list[Any] = []
        _refuse_live_backends(env_kwargs)
        ray = connect()
        self._ray = ray
        self.env_id, self.num_envs, self.group_size = env_id, num_envs, group_size
        cpus = int(ray.cluster_resources().get("CPU", 1))
        groups = num_envs // max(group_size, 1)
        self.blocks = actor_blocks(num_envs, num_actors or max(1, min(cpus, groups)), group_size)
        options = {**DEFAULT_ACTOR_OPTIONS, **(actor_options or {})}
        remote = ray.remote(VectorWorker).options(**options)
        self.actors = [remote.remote(env_id, len(b), env_kwargs,
                                     [i % group_size for i in b]) for b in self.blocks]
        try:
            observation_space, action_space, mode = ray.get(self.actors[0].describe.remote())
        except Exception:
            self.close_extras()
            raise
        self.single_observation_space, self.single_action_space = observation_space, action_space
        self.observation_space = batch_space(observation_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)
        self._part_spaces = [batch_space(observation_space, len(b)) for b in self.blocks]
        self.metadata = {"render_modes": [], "autoreset_mode": mode}
        self._observations = create_empty_array(observation_space, num_envs)
        self._parts: list[Any] = [create_empty_array(observation_space, len(b))
                                  for b in self.blocks]
        """Each actor's last observations (blank until it is reset)."""
        self._owed: dict[int, tuple[Any, ...]] = {}
        """NEXT_STEP: the step results (a fresh reset's) that actors owe the next step, which
        ignores their actions."""
        self._groups = np.arange(num_envs) // group_size

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``: actors with none of them
        are not called); other options go to every actor's vector env as given."""
        if isinstance(seed, int | np.integer):
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        seeds = sub_env_seeds(seed, self.num_envs, self.group_size, self.np_random)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            mask = np.asarray(mask, dtype=np.bool_)
        refs = {}
        for k, (actor, block) in enumerate(zip(self.actors, self.blocks, strict=True)):
            part = dict(options)
            if mask is not None:
                part["reset_mask"] = mask[block.start:block.stop]
                if not part["reset_mask"].any():  # an actor with none to reset is left alone
                    continue
            refs[k] = self._reset_call(actor, seeds[block.start:block.stop], part)
            self._owed.pop(k, None)
        results = {k: self._get(k, ref) for k, ref in refs.items()}
        for k, (observations, _) in results.items():
            self._parts[k] = observations
        return self._join(self._parts), self._info([results[k][1] if k in results else {}
                                                    for k in range(len(self.blocks))])

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every actor at once; gather; recover the actors that failed."""
        actions = split_batch(self.action_space, self.single_action_space, actions, self.blocks)
        refs = {k: actor.step.remote(actions[k]) for k, actor in enumerate(self.actors)
                if k not in self._owed}
        parts = [self._owed.pop(k, None) or self._gather(k, refs[k])
                 for k in range(len(self.actors))]
        self._parts = [part[0] for part in parts]
        rewards, terminated, truncated = (np.concatenate([part[i] for part in parts])
                                          for i in (1, 2, 3))
        return (self._join(self._parts), rewards, terminated, truncated,
                self._info([part[4] for part in parts]))

    def _gather(self, k: int, ref: Any) -> tuple[Any, ...]:
        """Actor k's step; on a fault, its sub-envs freshly reset and truncated."""
        ray = self._ray
        try:
            return ray.get(ref)
        except ActorRestarted:
            fault = f"actor {k} was restarted and lost its episodes"
        except StepFailed as exc:
            fault = f"actor {k} failed: {exc.cause}"
        except ray.exceptions.RayActorError as exc:
            fault = f"actor {k} died: {fault_text(exc)}"
        except ray.exceptions.RayError as exc:  # e.g. a result lost with its node
            fault = f"actor {k} failed: {fault_text(exc)}"
        return self._recover(k, fault)

    def _recover(self, k: int, fault: str) -> tuple[Any, ...]:
        """Reset actor k's sub-envs (new seeds from ``np_random``); their step results say
        ``fault`` as the autoreset mode has it."""
        block, last = self.blocks[k], self._parts[k]
        seeds = sub_env_seeds(draw_seed(self.np_random), len(block),
                              self.group_size, None)
        observations, info = self._get(k, self._reset_call(self.actors[k], seeds, {}))
        n, mode = len(block), self.metadata["autoreset_mode"]
        if mode is AutoresetMode.SAME_STEP:
            place_info(info, batch_infos([{"fault": fault, "final_obs": o, "final_info": {
                "fault": fault}} for o in last], n), 0, n)
        else:
            if mode is AutoresetMode.NEXT_STEP:
                self._owed[k] = (observations, np.zeros(n), np.zeros(n, np.bool_),
                                 np.zeros(n, np.bool_), info)
            observations, info = last, batch_infos([{"fault": fault}] * n, n)
        return observations, np.zeros(n), np.zeros(n, np.bool_), np.ones(n, np.bool_), info

    def _reset_call(self, actor: Any, seeds: list[int | None], options: dict[str, Any]) -> Any:
        """A reset that Ray retries through the actor's restart."""
        return actor.reset.options(max_task_retries=-1).remote(seeds, options)

    def _get(self, k: int, ref: Any) -> Any:
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.ActorDiedError as exc:
            raise RuntimeError(f"actor {k} died and Ray cannot restart it (max_restarts spent "
                               f"or its node lost): {fault_text(exc)}") from exc

    def _join(self, parts: list[Any]) -> Any:
        self._observations = join_batches(self.single_observation_space, self._part_spaces,
                                          parts, self._observations)
        return self._observations

    def _info(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """The actors' infos as one vector info, with each sub-env's group."""
        info: dict[str, Any] = {}
        for block, part in zip(self.blocks, parts, strict=True):
            place_info(info, part, block.start, self.num_envs)
        info["group"], info["_group"] = self._groups.copy(), np.ones(self.num_envs, np.bool_)
        return info

    def close_extras(self, **kwargs: Any) -> None:
        """Close every actor's vector env (waiting at most ``CLOSE_TIMEOUT_S``), then kill it."""
        if not self.actors:
            return
        ray, actors, self.actors = self._ray, self.actors, []
        refs = [actor.close.remote() for actor in actors]
        ray.wait(refs, num_returns=len(refs), timeout=CLOSE_TIMEOUT_S)
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - gone already: nothing left behind
                pass
