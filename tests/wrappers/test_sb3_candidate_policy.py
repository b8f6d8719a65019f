"""CandidateScoringPolicy on an observation without candidates names what it needs."""

from __future__ import annotations

import gymnasium as gym
import pytest
from stable_baselines3 import PPO

import floor_tasks  # noqa: F401 - registers AgentFloor/<ID>-v0
from agentworld_envs.wrappers import (
    CandidateScoringPolicy,
    DiscreteCandidateActions,
    TokenizeObservation,
    wrap_for_sb3,
)


@pytest.mark.parametrize("make", [
    lambda: wrap_for_sb3(gym.make("AgentFloor/C4-v0"), max_candidates=12, max_length=8,
                         observation="box"),
    lambda: TokenizeObservation(DiscreteCandidateActions(gym.make("AgentFloor/C4-v0"), 12), 8),
], ids=["box", "no-candidates"])
def test_an_observation_without_candidates_is_refused_by_name(make: object) -> None:
    """Before, the ``"box"`` form raised ``TypeError: 'Box' object is not subscriptable``."""
    with pytest.raises(ValueError, match="'candidates' and 'candidate_mask'.*observation='dict'"):
        PPO(CandidateScoringPolicy, make(), device="cpu")
