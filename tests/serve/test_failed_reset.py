"""``AgentWorldEnv.reset`` refused (an unknown scenario, a scenario of the wrong kind) leaves the
env's episode and ``np_random`` as they were: a gym user's later draws do not depend on a
refused reset (the env reseeded before the simulator refused the scenario)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/*

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

REFUSED = [{"scenario": "no-such-scenario"}, {"scenario": 5}, {"scenario": {"id": "x"}}]


def _draws(env: gym.Env, seeds: list[int | None]) -> list[tuple[str, list[str]]]:
    """The scenario and the candidate order each reset draws."""
    played = []
    for seed in seeds:
        _, info = env.reset(seed=seed)
        played.append((info["scenario_id"], env.unwrapped.candidate_actions()))
    return played


@pytest.mark.parametrize("refused", REFUSED)
def test_a_refused_reset_leaves_the_envs_draws_and_episode_as_they_were(refused):
    untouched = gym.make("AgentWorld/Search-v0", backend="scripted")
    refusing = gym.make("AgentWorld/Search-v0", backend="scripted")
    for env in (untouched, refusing):
        env.reset(seed=7)
    before = refusing.unwrapped.scenario
    with pytest.raises(ValueError):
        refusing.reset(seed=99, options=refused)
    assert refusing.unwrapped.scenario is before
    assert refusing.unwrapped.np_random_seed == 7
    assert _draws(refusing, [None] * 6) == _draws(untouched, [None] * 6)


def test_seeds_0_to_50_draw_the_same_with_refused_resets_in_between():
    """Each seed's reset, and the unseeded reset after it, draw as on an env never refused."""
    untouched = gym.make("AgentWorld/Search-v0", backend="scripted")
    refusing = gym.make("AgentWorld/Search-v0", backend="scripted")
    expected = _draws(untouched, [seed for seed in range(51) for seed in (seed, None)])
    played = []
    for seed in range(51):
        played += _draws(refusing, [seed])
        with pytest.raises(ValueError):
            refusing.reset(seed=seed + 1000, options=REFUSED[seed % len(REFUSED)])
        played += _draws(refusing, [None])
    assert played == expected
    assert len({scenario for scenario, _ in played}) > 1  # the seeds really draw
