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

Example:
    >>> import gymnasium as gym, agentworld_envs
    >>> envs = gym.make_vec("AgentWorld/MCP-v0", num_envs=3, backend="scripted")
    >>> obs, infos = envs.reset(seed=0)
    >>> len(obs), envs.metadata["autoreset_mode"].value
    (3, 'SameStep')
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import error
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from agentworld_envs.protocol.seeding import episode_seed
from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.episode import Episode
from agentworld_envs.sim.simulator import Simulator
from agentworld_envs.sim.vector_info import batch_infos

__all__ = ["AgentWorldVectorEnv"]


_MODES = {"same_step": AutoresetMode.SAME_STEP, "disabled": AutoresetMode.DISABLED}


def _autoreset_mode(value: str | AutoresetMode) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        value = value.name
    mode = _MODES.get(str(value).lower())
    if mode is None:
        raise ValueError(f"autoreset_mode must be 'same_step' or 'disabled', not {value!r} "
                         "(NEXT_STEP would waste a step per finished episode)")
    return mode


class AgentWorldVectorEnv(VectorEnv):
    """N episodes of one simulated domain, stepped together.

    Args:
        domain: The domain key (set by the registered env id).
        num_envs: How many sub-envs.
        max_steps: Step budget per episode, above or below a scenario's own; overrides
            ``max_episode_steps``, which a scenario may lower.
        max_episode_steps: Step budget per episode (``gym.make_vec`` passes the registered one).
        autoreset_mode: ``"same_step"`` (default) or ``"disabled"``.
        render_mode: Unused; vector rendering is not supported.
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
        if num_envs < 1:
            raise ValueError("num_envs must be >= 1")
        if sampling_streams is not None and len(sampling_streams) != num_envs:
            raise ValueError(f"expected {num_envs} sampling streams, got {len(sampling_streams)}")
        if render_mode is not None:
            raise ValueError("the vector env does not render; use the single env")
        self.num_envs = num_envs
        self.config = SimConfig(domain=domain, **settings)
        self.sim = Simulator(self.config)
        self.max_steps = max_steps or max_episode_steps or self.sim.domain.max_steps
        self._exact_budget = max_steps is not None
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.single_observation_space = UnicodeText(OBSERVATION_MAX_LENGTH)
        self.single_action_space = UnicodeText(ACTION_MAX_LENGTH)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self.episodes: list[Episode | None] = [None] * num_envs
        self._observations = [""] * num_envs
        self._streams = [int(stream) for stream in sampling_streams or [0] * num_envs]
        self._grouped = sampling_streams is not None
        self._episodes: list[tuple[int, int]] = [(0, 0)] * num_envs
        """Grouped: each sub-env's last reset seed and the episodes started since without one."""

    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} seeds, got {len(seed)}")
        return list(seed)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset every sub-env, or those in ``options["reset_mask"]``.

        ``seed=s`` seeds sub-env i with ``s + i``. ``options["scenario"]`` applies to every
        sub-env, or, given as a list of ``num_envs`` scenarios, one to each.
        """
        seeds = self._seeds(seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        scenarios = options.pop("scenario", None)
        if not isinstance(scenarios, list | tuple):
            scenarios = [scenarios] * self.num_envs
        elif len(scenarios) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} scenarios, got {len(scenarios)}")
        indices = range(self.num_envs) if mask is None else np.flatnonzero(np.asarray(mask))
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for i in indices:
            self._seed_next(i, seeds[i])
            infos[i] = self._start(i, {**options, "scenario": scenarios[i]})
        return tuple(self._observations), batch_infos(infos, self.num_envs)

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

    def close_extras(self, **kwargs: Any) -> None:
        """Close the model clients."""
        self.sim.close()
