"""ParameterSharingVecEnv refuses what would silently corrupt training, as SB3's VecEnvs do."""

from __future__ import annotations

from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium import spaces
from pettingzoo import ParallelEnv

import team_envs  # noqa: F401 - registers team_envs/*
from agentworld_envs.wrappers import ParameterSharingVecEnv


class PartsTeam(ParallelEnv):
    """A one-step team whose agents observe the given ``Dict`` spaces (sampled, seeded)."""

    metadata = {"name": "parts_team_v0", "render_modes": []}
    render_mode = None

    def __init__(self, parts: dict[str, spaces.Dict]) -> None:
        self.parts, self.possible_agents, self.agents = parts, list(parts), []

    def observation_space(self, agent: str) -> spaces.Space:
        return self.parts[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        for agent in self.agents:
            self.parts[agent].seed(seed)
        return ({agent: self.parts[agent].sample() for agent in self.agents},
                {agent: {} for agent in self.agents})

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations = {agent: self.parts[agent].sample() for agent in self.agents}
        ended = {agent: True for agent in self.agents}
        return (observations, {agent: 0.0 for agent in self.agents}, ended,
                {agent: False for agent in self.agents}, {agent: {} for agent in self.agents})


def test_one_env_returned_for_every_copy_is_refused() -> None:
    """Before, ``lambda: env`` gave two 'copies' of one env: each vector step stepped it twice
    (copy 0 saw turn 1, copy 1 turn 2), silently. SB3's DummyVecEnv refuses this too."""
    env = pettingzoo.make("parallel", "team_envs/relay-v0")
    with pytest.raises(ValueError, match="new env at every call"):
        ParameterSharingVecEnv(lambda: env, num_copies=2)
    venv = ParameterSharingVecEnv(lambda: env)  # one copy of one env is fine
    venv.seed(0)
    venv.reset()
    obs = venv.step(np.zeros((venv.num_envs, 1), dtype=np.int64))[0]
    assert obs["turn"].tolist() == [1] * venv.num_envs


def test_copies_are_distinct_envs() -> None:
    venv = ParameterSharingVecEnv(lambda: pettingzoo.make("parallel", "team_envs/relay-v0"),
                                  num_copies=2)
    venv.seed(0)
    venv.reset()
    obs = venv.step(np.zeros((venv.num_envs, 1), dtype=np.int64))[0]
    assert obs["turn"].tolist() == [1] * venv.num_envs


def test_an_own_agent_index_part_is_refused() -> None:
    """Before, the env's own ``agent_index`` part (its space and every value) was silently
    replaced by the wrapper's."""
    part = spaces.Dict({"agent_index": spaces.Discrete(10), "x": spaces.Discrete(3)})
    with pytest.raises(ValueError, match=r"\['agent_index'\] clash"):
        ParameterSharingVecEnv(lambda: PartsTeam({"a_0": part, "a_1": part}))


def test_a_part_named_like_a_split_part_is_refused() -> None:
    """Before, ``a_1``'s ``x`` (``Discrete(3)``, split to ``x_1``) landed on ``a_0``'s ``x_1``
    (a ``Box(3,)``): the value 1 became ``[1., 1., 1.]`` and ``Discrete(3)`` left the space."""
    parts = {"a_0": spaces.Dict({"x": spaces.Discrete(2), "x_1": spaces.Box(0, 1, (3,))}),
             "a_1": spaces.Dict({"x": spaces.Discrete(3)})}
    with pytest.raises(ValueError, match=r"\['x_1'\] clash"):
        ParameterSharingVecEnv(lambda: PartsTeam(parts))


def test_split_parts_without_a_clash_keep_every_value() -> None:
    parts = {"a_0": spaces.Dict({"x": spaces.Discrete(2), "y": spaces.Box(0, 1, (3,))}),
             "a_1": spaces.Dict({"x": spaces.Discrete(3)})}
    venv = ParameterSharingVecEnv(lambda: PartsTeam(parts))
    assert set(venv.observation_space.spaces) == {"agent_index", "x_0", "x_1", "y"}
    venv.seed(0)
    obs = venv.reset()
    raw = PartsTeam(parts).reset(seed=0)[0]
    assert obs["x_0"].tolist() == [raw["a_0"]["x"], 0]
    assert obs["x_1"].tolist() == [0, raw["a_1"]["x"]]
    assert np.allclose(obs["y"][0], raw["a_0"]["y"]) and not obs["y"][1].any()
