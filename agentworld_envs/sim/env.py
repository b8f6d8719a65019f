"""The Gymnasium env of one simulated domain: ``AgentWorld/<Domain>-v0``.

One ``step(action)`` is one agent turn. The world model predicts the next observation; the env
reads termination from the action through the domain's interface, truncates at the step budget,
and computes the reward once, at the end of the episode, with its breakdown in ``info``.

Example:
    >>> import gymnasium as gym, agentworld_envs
    >>> env = gym.make("AgentWorld/Search-v0", backend="scripted")  # no model: placeholders
    >>> obs, info = env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    >>> obs, reward, terminated, truncated, info = env.step(
    ...     '{"name": "web_search", "arguments": {"queries": ["Corran Point lighthouse"]}}')
    >>> info["world_model"]["called"], terminated
    (True, False)
    >>> _, reward, terminated, _, info = env.step("It was Maren Holt.")
    >>> reward, terminated, info["reward_breakdown"]["checks"]  # no placeholder showed the name
    (0.0, True, {'answer_matches': True, 'answer_observed': False})
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentworld_envs.errors import transportable_errors
from agentworld_envs.protocol.reset_options import check_reset_options
from agentworld_envs.protocol.seeding import generator_state, restore_generator
from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)
from agentworld_envs.sim.config import SimConfig, step_budget
from agentworld_envs.sim.episode import Episode
from agentworld_envs.sim.simulator import Simulator
from agentworld_envs.world.scenario import Scenario

__all__ = ["RESET_OPTIONS", "AgentWorldEnv", "check_render_mode", "render_transcript"]

RESET_OPTIONS = ("scenario",)
"""The reset options an ``AgentWorld`` env reads (its vector env also ``reset_mask``)."""


def check_render_mode(render_mode: Any) -> None:
    """Refuse a ``render_mode`` other than None or ``"ansi"``."""
    if render_mode is not None and render_mode not in AgentWorldEnv.metadata["render_modes"]:
        raise ValueError(f"unsupported render_mode {render_mode!r}; use 'ansi' or None")


def render_transcript(episode: Episode) -> str:
    """An episode's turns as readable text."""
    blocks = [f"[task] {episode.scenario.id}\n{episode.scenario.instruction}"]
    for entry in episode.transcript:
        flags = f" flags={','.join(entry['flags'])}" if entry["flags"] else ""
        blocks.append(f"[turn {entry['turn']} action]\n{entry['action']}\n"
                      f"[turn {entry['turn']} observation ({entry['kind']}){flags}]\n"
                      f"{entry['observation']}")
    return "\n\n".join(blocks)


class AgentWorldEnv(gym.Env[str, str]):
    """A domain simulated by a language world model.

    Args:
        domain: The domain key, e.g. ``"mcp"`` (set by the registered env id).
        max_steps: Step budget of every episode, above or below a scenario's own; by default
            the domain's (the registered ``max_episode_steps``), which a scenario may lower.
            Pass the same value as ``max_episode_steps`` to ``gym.make``, or use
            :func:`agentworld_envs.registration.make`.
        render_mode: ``"ansi"`` renders the transcript.
        **settings: The :class:`~agentworld_envs.sim.config.SimConfig` fields: ``backend``,
            ``sampling``, ``judge_backend``, ``reward``, ``scenarios``, ``controls``,
            ``fictional``, ``record_path``, ``timeout_s``, ``mode``, ``reveal_reference``, ...

    The reset info holds the task, the tools and the candidate actions (shuffled from
    ``np_random`` at each reset), never the scenario's hidden fields: its solution, reference
    answer and world notes appear as ``info["reference"]`` only with ``reveal_reference=True``
    (e.g. ``gym.make("AgentWorld/Search-v0", reveal_reference=True)``), for tests and oracles.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, domain: str, max_steps: int | None = None,
                 render_mode: str | None = None, **settings: Any) -> None:
        check_render_mode(render_mode)
        self.render_mode = render_mode
        max_steps = step_budget(max_steps, "max_steps")
        self.config = SimConfig(domain=domain, **settings)
        self.sim = Simulator(self.config)
        self.max_steps = max_steps or self.sim.domain.max_steps
        self._exact_budget = max_steps is not None
        self.observation_space = UnicodeText(OBSERVATION_MAX_LENGTH)
        self.action_space = UnicodeText(ACTION_MAX_LENGTH)
        self.episode: Episode | None = None

    @property
    def scenario(self) -> Scenario | None:
        """The current episode's scenario."""
        return self.episode.scenario if self.episode else None

    def candidate_actions(self) -> list[str]:
        """The current scenario's admissible actions, for a ``Discrete``-action wrapper: the
        solution's actions among distractors, in an order shuffled at each reset."""
        if self.episode is None:
            raise gym.error.ResetNeeded("call reset() before asking for candidate actions")
        return list(self.episode.candidates)

    @transportable_errors
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: ``options={"scenario": id | dict | Scenario}`` picks the scenario,
        otherwise it is drawn from ``np_random``. Any other option raises ``ValueError``. A
        reset that fails leaves the episode and ``np_random`` as they were."""
        check_reset_options(options, RESET_OPTIONS)
        kept = self._np_random, self._np_random_seed, generator_state(self._np_random)
        super().reset(seed=seed)
        try:
            self.episode = self.sim.episode(self.np_random, options, self.max_steps,
                                            exact=self._exact_budget)
        except Exception:  # the same generator, which the episode under way draws from
            self._np_random, self._np_random_seed = kept[:2]
            restore_generator(self._np_random, kept[2])
            raise
        return self.episode.first_observation()

    @transportable_errors
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play one agent turn. Never raises on the action's content."""
        if self.episode is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        results, error = self.sim.advance([self.episode], [action])
        if error is not None:
            raise error
        result = results[0]
        return result.observation, result.reward, result.terminated, result.truncated, \
            result.info

    def render(self) -> str | None:
        """The transcript so far (``ansi`` mode)."""
        if self.render_mode != "ansi" or self.episode is None:
            return None
        return render_transcript(self.episode)

    def close(self) -> None:
        """Close the model clients (safe to call twice)."""
        self.sim.close()
