"""Bad ``options["scenario"]`` at reset: one ``ValueError`` saying what is wrong, env playable."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.errors import SubEnvError
from agentworld_envs.registration import env_id, make


@pytest.mark.parametrize(("scenario", "message"), [
    (3, "must be a scenario id, dict or Scenario, not int"),  # was TypeError: not a mapping
    (["search-lighthouse-keeper"], "not list"),
    ({"id": "half"}, r"(?s)is no valid search scenario: .*instruction"),  # was a SubEnvError
    ({"id": "x", "instruction": "q", "candidate_actions": []}, "candidate_actions"),
])
def test_a_bad_scenario_option_is_a_value_error_and_the_env_plays_on(scenario, message) -> None:
    env = make("search", backend="scripted")
    with pytest.raises(ValueError, match=message) as caught:
        env.reset(seed=0, options={"scenario": scenario})
    assert not isinstance(caught.value, SubEnvError)
    _, info = env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    assert info["scenario_id"] == "search-lighthouse-keeper"
    assert env.step("Maren Holt")[2]


def test_the_vector_env_refuses_a_bad_scenario_alike() -> None:
    envs = gym.make_vec(env_id("search"), num_envs=2, backend="scripted")
    with pytest.raises(ValueError, match="is no valid search scenario") as caught:
        envs.reset(seed=0, options={"scenario": [{"id": "half"}, "search-lighthouse-keeper"]})
    assert not isinstance(caught.value, SubEnvError)
