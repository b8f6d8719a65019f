"""Rewards need the observation: an answer scores only if something the agent saw of the world
supported it (issue 30, item 4). Every built-in scenario of every domain is checked; that every
solution scores 1 is tests/sim/test_hidden_answers.py's oracle test."""

from __future__ import annotations

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.registration import make
from agentworld_envs.world.rewards import EpisodeLog, run_checks
from agentworld_envs.world.scenario import Check, Scenario
from tests.helpers.witness import evidence, witness_backend


def scenarios(domain: str) -> list[Scenario]:
    return list(get_domain(domain).builtin.values())


def play(scenario: Scenario, actions: list[str], backend: str | dict = "scripted") -> float:
    """The reward of an episode of ``actions`` (floor: scored against the real env)."""
    kwargs = {"reward": "real"} if scenario.domain == "floor" else {}
    env = make(scenario.domain, backend=backend, **kwargs)
    env.reset(seed=0, options={"scenario": scenario.id})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert terminated, (scenario.id, info)
    return reward


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_every_reference_answer_needs_an_observation_that_shows_it(domain: str) -> None:
    for scenario in scenarios(domain):
        if scenario.reference_answer is None:
            continue
        assert evidence(scenario), f"{scenario.id} scores its answer without asking to see it"
        answer = scenario.solution_actions[-1]
        assert play(scenario, [answer]) == 0.0, scenario.id  # blind, at once
        assert play(scenario, scenario.solution_actions) == 0.0, scenario.id  # saw placeholders
        assert play(scenario, scenario.solution_actions, witness_backend(scenario)) == 1.0, \
            scenario.id


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_no_scenario_is_solved_by_its_last_action_alone(domain: str) -> None:
    """Ending at once with the solution's last action scores 0. A solution of a single action
    acts on what the reset showed (a disabled button on screen, a ticket in the instruction);
    none of those has a reference answer."""
    for scenario in scenarios(domain):
        blind = play(scenario, scenario.solution_actions[-1:])
        if len(scenario.solution) == 1:
            assert scenario.reference_answer is None and blind == 1.0, scenario.id
        else:
            assert blind == 0.0, scenario.id


KEEPER = get_domain("search").builtin["search-lighthouse-keeper"]
SHOWN = '{"keeper": "Maren Holt"}'


@pytest.mark.parametrize(("sources", "supported"), [
    (["world_model"], True), (["real"], True), (["placeholder"], False), (["fallback"], False),
    (["local"], False), ([], False)])
def test_only_an_observation_of_the_world_supports_an_answer(sources, supported) -> None:
    """A placeholder, a fallback or the env's own echo of the agent's words (an invalid call
    naming the answer, the final answer itself) never does."""
    log = EpisodeLog(KEEPER, observations=[SHOWN][:len(sources)], sources=sources)
    assert run_checks([Check(check="answer_observed")], log) == {"answer_observed": supported}


def test_an_invalid_call_that_names_the_answer_does_not_support_it() -> None:
    env = make("search", backend="scripted")
    env.reset(seed=0, options={"scenario": KEEPER.id})
    obs, *_ = env.step('{"name": "Maren Holt", "arguments": {}}')
    assert "Maren Holt" in obs
    _, reward, terminated, _, _ = env.step("It was Maren Holt.")
    assert terminated and reward == 0.0


def test_the_initial_screen_is_an_observation() -> None:
    scenario = get_domain("android").builtin["android-battery-level"]
    shown = scenario.model_copy(update={"initial_state": f"{scenario.initial_state}\n9: 62%"})
    log = EpisodeLog(shown, answer="62", ending="final_answer")
    assert run_checks(scenario.reward.checks, log, reveal=False) == {
        "answer_matches": True, "answer_observed": True}
