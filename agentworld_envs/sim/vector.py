"""A natively batched vector env: N simulated episodes, one world-model call per step.

``gym.make_vec("AgentWorld/MCP-v0", num_envs=N)`` builds it through the registered
``vector_entry_point``. Each step sends every sub-env's world-model request to the backend as
ONE ``complete`` call (the ``hf`` and ``vllm`` backends generate them as one batch; the
``openai`` backend sends them as concurrent requests), then one judge call for the episodes that
ended and ask for a judge.

Autoreset is ``SAME_STEP`` by default: a finished sub-env is reset inside the step that ended
it (a reset needs no model call), its last observation and info go to ``info["final_obs"]`` and
``info["final_info"]``, and the returned observation is the new episode's first one.
``autoreset_mode="disabled"`` leaves resets to the caller (``reset(options={"reset_mask": m})``).
A step that raises (``on_fault="raise"``, ``max_faults``) does so after those resets, so no
sub-env is left on an ended episode; a :class:`~agentworld_envs.sim.model_client.WorldModelFault`
holds every sub-env's result from before them (``results``: final observation, reward, info).

``call``, ``get_attr`` and ``set_attr`` work as ``SyncVectorEnv``'s over sub-env views
(:class:`SubEnv`: what the single env offers per episode), and ``render()`` gives each
sub-env's transcript with ``render_mode="ansi"``.

Example:
    >>> import gymnasium as gym, agentworld_envs
    >>> envs = gym.make_vec("AgentWorld/MCP-v0", num_envs=3, backend="scripted")
    >>> obs, infos = envs.reset(seed=0)
    >>> len(obs), envs.metadata["autoreset_mode"].value
    (3, 'SameStep')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from gymnasium import error
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from agentworld_envs.protocol.integers import check_int
from agentworld_envs.protocol.reset_options import check_reset_options
from agentworld_envs.protocol.seeding import (
    episode_seed,
    generator_state,
    restore_generator,
    sub_env_seeds,
)
from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)
from agentworld_envs.sim.config import SimConfig, step_budget
from agentworld_envs.sim.env import RESET_OPTIONS, AgentWorldEnv, check_render_mode
from agentworld_envs.sim.episode import Episode
from agentworld_envs.sim.simulator import Simulator
from agentworld_envs.sim.vector_info import batch_infos

__all__ = ["SHARED_ATTRIBUTES", "AgentWorldVectorEnv", "SubEnv", "sub_env_values"]

SHARED_ATTRIBUTES = ("max_steps", "render_mode", "config", "sim")
"""The vector env's attributes that every sub-env reads as its own (one value for all)."""

_MODES = {"same_step": AutoresetMode.SAME_STEP, "disabled": AutoresetMode.DISABLED}


def _autoreset_mode(value: str | AutoresetMode) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        value = value.name
    mode = _MODES.get(str(value).lower())
    if mode is None:
        raise ValueError(f"autoreset_mode must be 'same_step' or 'disabled', not {value!r} "
                         "(NEXT_STEP would waste a step per finished episode)")
    return mode


def _sampling_streams(streams: Any, num_envs: int) -> list[int]:
    """``sampling_streams`` as ``num_envs`` ints >= 0 (a list, tuple or array of them)."""
    if not isinstance(streams, list | tuple | np.ndarray):
        raise TypeError(f"sampling_streams must be a list of {num_envs} integers >= 0, got "
                        f"{streams!r}")
    if len(streams) != num_envs:
        raise ValueError(f"expected {num_envs} sampling streams, got {len(streams)}")
    return [check_int(f"sampling_streams[{i}]", stream, 0) for i, stream in enumerate(streams)]


def sub_env_values(values: Any, num_envs: int) -> list[Any]:
    """``set_attr``'s values, one per sub-env, by ``SyncVectorEnv``'s rule: a list or tuple of
    ``num_envs`` values (another length raises ``ValueError``), else one value for all."""
    if not isinstance(values, list | tuple):
        return [values] * num_envs
    if len(values) != num_envs:
        raise ValueError("Values must be a list or tuple with length equal to the number of "
                         f"environments. Got `{len(values)}` values for {num_envs} environments.")
    return list(values)


class SubEnv:
    """Sub-env ``index`` of an :class:`AgentWorldVectorEnv`, as ``call``, ``get_attr`` and
    ``set_attr`` reach it: the single env's ``episode``, ``np_random``, ``scenario``,
    ``candidate_actions()`` and ``render()`` (:class:`~agentworld_envs.sim.env.AgentWorldEnv`'s
    own, on the vector env's episode), the vector env's :data:`SHARED_ATTRIBUTES`, and what
    ``set_attr`` stored on it."""

    scenario = AgentWorldEnv.scenario
    candidate_actions = AgentWorldEnv.candidate_actions
    render = AgentWorldEnv.render

    def __init__(self, envs: AgentWorldVectorEnv, index: int) -> None:
        self._envs, self._index = envs, index

    @property
    def episode(self) -> Episode | None:
        """The sub-env's current episode (None before its first reset)."""
        return self._envs.episodes[self._index]

    @property
    def np_random(self) -> np.random.Generator | None:
        """The sub-env's generator (None before its first reset); set, as a single env's, it
        is the one the next reset without a seed draws from."""
        return self._envs._rngs[self._index]

    @np_random.setter
    def np_random(self, generator: np.random.Generator) -> None:
        self._envs._rngs[self._index] = generator

    def __getattr__(self, name: str) -> Any:  # a name the view does not hold
        if name in SHARED_ATTRIBUTES:
            return getattr(self._envs, name)
        raise AttributeError(f"sub-env {self.__dict__.get('_index')} of AgentWorldVectorEnv has "
                             f"no attribute {name!r}")


class AgentWorldVectorEnv(VectorEnv):
    """N episodes of one simulated domain, stepped together.

    Args:
        domain: The domain key (set by the registered env id).
        num_envs: How many sub-envs.
        max_steps: Step budget per episode, above or below a scenario's own; overrides
            ``max_episode_steps``, which a scenario may lower.
        max_episode_steps: Step budget per episode (``gym.make_vec`` passes the registered one;
            ``-1``, which ``gym.make`` reads as no ``TimeLimit``, leaves the domain's).
        autoreset_mode: ``"same_step"`` (default) or ``"disabled"``.
        render_mode: ``"ansi"``: ``render()`` gives each sub-env's transcript.
        sampling_streams: Each sub-env's sampling stream (default: all 0). Sub-envs reset with
            one seed play the same scenario; in different streams their world-model requests
            get different seeds, so a sampling world model answers them differently (a GRPO
            group, as ``RayVectorEnv(group_size=G)`` makes).
        **settings: The :class:`~agentworld_envs.sim.config.SimConfig` fields, as for the
            single env.
    """

    def __init__(self, domain: str, num_envs: int = 1, max_steps: int | None = None,
                 max_episode_steps: int | None = None,
                 autoreset_mode: str | AutoresetMode = "same_step",
                 render_mode: str | None = None, sampling_streams: list[int] | None = None,
                 **settings: Any) -> None:
        num_envs = check_int("num_envs", num_envs, 1)
        streams = [0] * num_envs if sampling_streams is None else _sampling_streams(
            sampling_streams, num_envs)
        check_render_mode(render_mode)
        max_steps = step_budget(max_steps, "max_steps")
        max_episode_steps = step_budget(  # -1: gym.make's "no TimeLimit", the domain's budget
            None if max_episode_steps == -1 else max_episode_steps, "max_episode_steps")
        self.num_envs = num_envs
        self.config = SimConfig(domain=domain, **settings)
        self.sim = Simulator(self.config)
        self.max_steps = max_steps or max_episode_steps or self.sim.domain.max_steps
        self._exact_budget = max_steps is not None
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.render_mode = render_mode
        self.metadata = {**AgentWorldEnv.metadata, "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = UnicodeText(OBSERVATION_MAX_LENGTH)
        self.single_action_space = UnicodeText(ACTION_MAX_LENGTH)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self.episodes: list[Episode | None] = [None] * num_envs
        self._observations = [""] * num_envs
        self._streams = streams
        self._grouped = sampling_streams is not None
        self._episodes: list[tuple[int, int]] = [(0, 0)] * num_envs
        """Grouped: each sub-env's last reset seed and the episodes started since without one."""
        self.sub_envs = [SubEnv(self, i) for i in range(num_envs)]

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset every sub-env, or those in ``options["reset_mask"]``.

        ``seed=s`` seeds sub-env i with ``s + i``. ``options["scenario"]`` applies to every
        sub-env, or, given as a list of ``num_envs`` scenarios, one to each. Any other option
        raises ``ValueError``. A reset that fails leaves every sub-env as it was.
        """
        check_reset_options(options, (*RESET_OPTIONS, "reset_mask"))
        seeds = sub_env_seeds(seed, self.num_envs, 1, None)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        scenarios = options.pop("scenario", None)
        if not isinstance(scenarios, list | tuple):
            scenarios = [scenarios] * self.num_envs
        elif len(scenarios) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} scenarios, got {len(scenarios)}")
        indices = range(self.num_envs) if mask is None else np.flatnonzero(self._mask(mask))
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        state = self._state()
        try:
            for i in indices:
                self._seed_next(i, seeds[i])
                infos[i] = self._start(i, {**options, "scenario": scenarios[i]})
        except Exception:  # a reset that fails leaves every sub-env as it was
            rngs, drawn, self.episodes[:], self._observations[:], self._episodes[:] = state
            self._rngs[:] = rngs  # the same generators, which the episodes under way draw from
            for rng, rng_state in zip(rngs, drawn, strict=True):
                restore_generator(rng, rng_state)
            raise
        return tuple(self._observations), batch_infos(infos, self.num_envs)

    def _state(self) -> tuple[list[Any], ...]:
        """What a reset changes: generators and their states (a reset draws from them),
        episodes, observations and grouped episode counts."""
        return (list(self._rngs), [generator_state(rng) for rng in self._rngs],
                list(self.episodes), list(self._observations), list(self._episodes))

    def _mask(self, mask: Any) -> np.ndarray:
        """``reset_mask`` checked as ``SyncVectorEnv`` checks it: booleans, one per sub-env."""
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"reset_mask must have dtype bool, got {mask.dtype}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"reset_mask must have shape ({self.num_envs},), got {mask.shape}")
        return mask

    def _seed_next(self, index: int, seed: int | None) -> None:
        """Seed sub-env ``index``'s generator for its next episode. Without a seed it goes on
        from the last episode, or, with sampling streams, takes :func:`episode_seed`."""
        if seed is None and self._rngs[index] is not None:
            if self._grouped:
                first, episode = self._episodes[index]
                self._episodes[index] = (first, episode + 1)
                self._rngs[index], _ = seeding.np_random(episode_seed(first, episode + 1))
            return
        self._rngs[index], seed_used = seeding.np_random(seed)
        self._episodes[index] = (seed_used, 0)

    def _start(self, index: int, options: dict[str, Any] | None) -> dict[str, Any]:
        episode = self.sim.episode(self._rngs[index], options, self.max_steps,
                                   self._streams[index], exact=self._exact_budget)
        self.episodes[index] = episode
        self._observations[index], info = episode.first_observation()
        return info

    def step(self, actions: Any) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every sub-env with one batched world-model call."""
        if any(episode is None for episode in self.episodes):
            raise error.ResetNeeded("call reset() before step()")
        if not isinstance(actions, Iterable) or isinstance(actions, str | bytes):
            raise TypeError(f"actions must hold one action per sub-env, got "
                            f"{type(actions).__name__}")  # a str was one action per character
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        results, fault = self.sim.advance(self.episodes, actions)  # type: ignore[arg-type]
        rewards = np.array([r.reward for r in results], dtype=np.float64)
        terminated = np.array([r.terminated for r in results], dtype=np.bool_)
        truncated = np.array([r.truncated for r in results], dtype=np.bool_)
        infos: list[dict[str, Any] | None] = []
        for i, result in enumerate(results):
            info = result.info
            self._observations[i] = result.observation
            if result.closes_episode and self.autoreset_mode is AutoresetMode.SAME_STEP:
                self._seed_next(i, None)
                info = {"final_obs": result.observation, "final_info": info,
                        **self._start(i, None)}
            infos.append(info)
        if fault is not None:  # raised once every ended episode has been reset
            raise fault
        return (tuple(self._observations), rewards, terminated, truncated,
                batch_infos(infos, self.num_envs))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Each sub-env's attribute ``name`` (:class:`SubEnv`), called with the arguments if
        callable, in sub-env order, as ``SyncVectorEnv.call``."""
        results = []
        for sub_env in self.sub_envs:
            value = getattr(sub_env, name)
            results.append(value(*args, **kwargs) if callable(value) else value)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Each sub-env's attribute ``name``, as ``SyncVectorEnv.get_attr`` (``call(name)``)."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """Set each sub-env's attribute ``name``: one value for all, or a list or tuple of
        ``num_envs`` values. A shared attribute (:data:`SHARED_ATTRIBUTES`) is set on the vector
        env, so it takes one value only (``ValueError`` otherwise)."""
        values = sub_env_values(values, self.num_envs)
        if name in SHARED_ATTRIBUTES:
            if any(value is not values[0] and value != values[0] for value in values):
                raise ValueError(f"{name!r} is shared by every sub-env of AgentWorldVectorEnv: "
                                 "give one value")
            setattr(self, name, values[0])
            return
        for sub_env, value in zip(self.sub_envs, values, strict=True):
            setattr(sub_env, name, value)

    def render(self) -> tuple[str | None, ...]:
        """Each sub-env's transcript so far (``ansi`` mode; else None each), as
        ``SyncVectorEnv.render``."""
        return self.call("render")

    def close_extras(self, **kwargs: Any) -> None:
        """Close the model clients."""
        self.sim.close()
