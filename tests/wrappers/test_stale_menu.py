"""A state whose candidates do not fit ``max_candidates`` leaves no stale menu behind.

Before, the wrappers kept the previous state's menu when reading the new one raised, so the
next index played an action of the old state in the new one, silently.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import ParallelEnv

from agentworld_envs.protocol.text_space import UnicodeText
from agentworld_envs.wrappers import DiscreteCandidateActions, ParameterSharingVecEnv


class GrowingMenuEnv(gym.Env):
    """Each episode offers one candidate more than the one before; it records what it plays."""

    observation_space = UnicodeText(64)
    action_space = UnicodeText(64)

    def __init__(self) -> None:
        self.episodes, self.played = 0, []

    def candidate_actions(self) -> list[str]:
        return [f"episode {self.episodes} choice {i}" for i in range(self.episodes)]

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.episodes += 1
        return "start", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.played.append(action)
        return "next", 0.0, False, False, {}


def test_a_reset_whose_candidates_do_not_fit_leaves_no_old_candidate_to_play() -> None:
    env = DiscreteCandidateActions(GrowingMenuEnv(), max_candidates=1)
    env.reset()
    with pytest.raises(ValueError, match="2 candidate actions do not fit max_candidates=1"):
        env.reset()
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    assert env.unwrapped.played == []


class GrowingMenuTeam(ParallelEnv):
    """Two agents choose words; ``agent_1`` gets one candidate more from the second episode."""

    metadata = {"name": "growing_menu_team_v0", "render_modes": []}
    render_mode = None

    def __init__(self) -> None:
        self.possible_agents, self.agents = ["agent_0", "agent_1"], []
        self.episodes = self.steps = 0
        self._space = UnicodeText(64)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._space

    def action_space(self, agent: str) -> spaces.Space:
        return self._space

    def candidate_actions(self, agent: str) -> list[str]:
        extra = ["purple"] if self.episodes > 1 and agent == "agent_1" else []
        return [*extra, "red", "green", "blue"]

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.episodes += 1
        self.agents = list(self.possible_agents)
        return {agent: "choose" for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        self.steps += 1
        return ({agent: "choose" for agent in self.agents}, {a: 0.0 for a in self.agents},
                {a: False for a in self.agents}, {a: False for a in self.agents},
                {a: {} for a in self.agents})


def test_a_copy_whose_candidates_do_not_fit_leaves_no_old_candidate_to_play() -> None:
    venv = ParameterSharingVecEnv(GrowingMenuTeam, max_candidates=3)
    venv.reset()
    with pytest.raises(ValueError, match="4 candidate actions do not fit max_candidates=3"):
        venv.reset()
    with pytest.raises(RuntimeError, match="call reset"):
        venv.step(np.array([0, 0]))
    assert venv.envs[0].steps == 0  # the copy did not step
