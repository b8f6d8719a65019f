"""Rule checks: one no episode could pass is refused when read; each reads what it says."""

from __future__ import annotations

import pydantic
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import make
from agentworld_envs.world.scenario import Scenario


def scenario(checks: list[dict], **fields) -> Scenario:
    return Scenario(domain="search", id="demo", instruction="How many?", candidate_actions=["a"],
                    reward={"checks": checks}, **fields)


@pytest.mark.parametrize(("checks", "fields", "message"), [
    # each once scored 0 in every episode, whatever the agent did
    ([{"check": "answer_observed"}], {}, "answer_observed needs a reference answer"),
    ([{"check": "answer_matches", "match": "number"}], {"reference_answer": "about twelve"},
     "answer_matches by number needs a number"),
    ([{"check": "answer_observed", "match": "number", "value": "none"}], {},
     "answer_observed by number needs a number"),
    ([{"check": "floor_verifier"}], {}, "floor_verifier needs an AgentFloor task"),
])
def test_a_check_that_can_never_pass_is_refused(checks, fields, message) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        scenario(checks, **fields)


@pytest.mark.parametrize(("checks", "fields"), [
    ([{"check": "answer_observed"}], {"reference_answer": "Ilsa Toren"}),
    ([{"check": "answer_observed", "value": "Ilsa Toren"}], {}),
    ([{"check": "answer_matches", "match": "number"}], {"reference_answer": "1,204 units"}),
    ([{"check": "floor_verifier"}], {"floor": {"task_id": "A1", "variant": "v0"}}),
])
def test_checks_that_can_pass_are_kept(checks, fields) -> None:
    assert scenario(checks, **fields).reward.checks[0].check == checks[0]["check"]


STATUS = {"domain": "mcp", "id": "status", "instruction": "What is the status?",
          "candidate_actions": ["a"],
          "tools": [{"name": "get_status", "parameters": {"type": "object", "properties": {}}}],
          "reward": {"checks": [{"check": "observation_contains",
                                 "value": "all systems nominal"}]}}


def test_observation_contains_reads_the_worlds_last_observation_not_the_final_answers() -> None:
    """The env's empty reply to the final answer was read: the check failed in every tool-domain
    episode that ended with an answer, however the world had answered."""
    env = make("mcp", backend={"name": "scripted", "rules": [
        {"match": ".", "reply": '{"status": "all systems nominal"}'}]})
    env.reset(seed=0, options={"scenario": STATUS})
    assert env.step('{"name": "get_status", "arguments": {}}')[4]["observation_source"] \
        == "world_model"
    _, reward, terminated, _, info = env.step("The status is: all systems nominal.")
    assert terminated and info["reward_breakdown"]["checks"] == {"observation_contains": True}
    assert reward == 1.0


def test_observation_contains_is_not_met_by_an_invalid_actions_echo() -> None:
    """An unknown tool's name comes back in the env's error: it once passed the check."""
    env = make("mcp", backend="scripted", max_steps=1)
    env.reset(seed=0, options={"scenario": STATUS})
    observation, reward, _, truncated, info = env.step(
        '{"name": "all systems nominal", "arguments": {}}')
    assert "all systems nominal" in observation and info["observation_source"] == "local"
    assert truncated and (reward, info["reward_breakdown"]["checks"]) == (
        0.0, {"observation_contains": False})
