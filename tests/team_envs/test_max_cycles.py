"""PettingZoo's ``make(..., max_cycles=)`` on the symbolic teams: before, every one raised
``TypeError: SymbolicTask.__init__() got an unexpected keyword argument 'max_cycles'``."""

from __future__ import annotations

import pettingzoo
import pytest

import team_envs  # noqa: F401  (registers the ids)


@pytest.mark.parametrize("env_id", ["team_envs/relay-v0", "team_envs/referential-v0",
                                    "team_envs/compositional-v0"])
def test_a_cycle_cap_leaves_a_symbolic_episode_whole(env_id: str) -> None:
    env = pettingzoo.make("parallel", env_id, max_cycles=1)
    env.reset(seed=0)
    steps = 0
    while env.agents:
        *_, terminations, truncations, _ = env.step(
            {agent: env.action_space(agent).sample() for agent in env.agents})
        steps += 1
    assert steps == len(env.possible_agents)  # every agent spoke, once
    assert all(terminations.values()) and not any(truncations.values())
    with pytest.raises(ValueError, match="max_cycles"):
        pettingzoo.make("parallel", env_id, max_cycles=0)
