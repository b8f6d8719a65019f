"""The floor domain: simulated AgentFloor tools measured against the real ones, and hybrid mode."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
import floor_tasks
from agentworld_envs.registration import env_id, make
from tests.helpers.floor_world import predicting, real_observations


def play(env, task_id: str) -> list[tuple]:
    env.reset(seed=0, options={"scenario": task_id})
    return [env.step(action) for action in floor_tasks.solution(task_id, "v0")]


def test_a_perfect_world_model_has_full_fidelity_and_passes_the_real_verifier() -> None:
    real = real_observations("C3")
    backend = predicting(real, thinking="recall")
    steps = play(make("floor", backend=backend, reveal_reference=True), "C3")
    for (obs, _, _, _, info), truth in zip(steps, real, strict=True):
        assert obs == truth == info["real_observation"]
        assert info["fidelity"] == {"exact": True, "structural": 1.0, "values": 1.0,
                                    "calls": 1.0, "predicted_json": True, "real_json": True}
    sources = [info["observation_source"] for *_, info in steps]
    assert sources == ["world_model", "world_model", "real"]  # the real env decides submissions
    _, reward, terminated, _, info = steps[-1]
    assert (reward, terminated, info["termination"]) == (1.0, True, "submitted")
    assert info["reward_breakdown"]["checks"] == {"floor_verifier": True}


def test_wrong_values_keep_the_structure_but_lose_value_fidelity() -> None:
    real = real_observations("C3")
    wrong = [o.replace('"skill_score": 70', '"skill_score": 40') for o in real]
    steps = play(make("floor", backend=predicting(wrong, thinking="recall")), "C3")
    first = steps[0][4]["fidelity"]
    assert first["exact"] is False and first["structural"] == 1.0 and 0 < first["values"] < 1
    assert steps[-1][4]["fidelity"]["exact"]  # the submission envelope holds no skill_score


def test_the_real_verifier_scores_what_really_happened_not_what_was_simulated() -> None:
    env = make("floor", backend=predicting(real_observations("C3"), thinking="recall"))
    env.reset(seed=0, options={"scenario": "C3"})
    _, reward, terminated, _, info = env.step(
        '{"name": "submit_decision", "arguments": {"record_id": "APP-55", "action": "reject"}}')
    assert not terminated  # the real tool rejected it, whatever the simulation said
    assert json.loads(info["real_observation"])["error"]["type"] == "submission_rejected"


def test_hybrid_mode_falls_back_to_the_real_tool_on_unusable_predictions() -> None:
    garbage = {"name": "scripted", "rules": [{"match": ".", "reply": "lorem ipsum"}]}
    action = floor_tasks.solution("C3", "v0")[0]
    simulated = make("floor", backend=garbage)
    simulated.reset(seed=0, options={"scenario": "C3"})
    obs, *_, info = simulated.step(action)
    assert obs == "lorem ipsum" and info["fidelity"]["structural"] == 0.0
    hybrid = make("floor", backend=garbage, mode="hybrid")
    hybrid.reset(seed=0, options={"scenario": "C3"})
    obs, *_, info = hybrid.step(action)
    assert obs == info["real_observation"] and info["observation_source"] == "real"
    assert json.loads(obs)["status"] == "ok"
    assert info["fidelity"]["predicted_json"] is False  # fidelity still measures the prediction


def test_hybrid_mode_serves_the_real_tools_it_is_told_to() -> None:
    predicted = '{"tool_name": "x", "call_id": "y", "status": "ok", "result": 1, "error": null}'
    backend = {"name": "scripted", "rules": [{"match": ".", "reply": predicted}]}
    env = make("floor", backend=backend, mode="hybrid", real_tools=["lookup_record"])
    steps = play(env, "C3")
    sources = [info["observation_source"] for *_, info in steps]
    assert sources == ["real", "world_model", "real"]  # submit_decision is always real


def test_agent_mistakes_are_answered_by_the_real_env() -> None:
    env = make("floor", backend="scripted")
    env.reset(seed=0, options={"scenario": "C3"})
    obs, _, _, _, info = env.step('{"name": "delete_database", "arguments": {}}')
    assert info["invalid_action"] and info["observation_source"] == "real"
    assert json.loads(obs)["error"]["type"] == "tool_not_available"
    assert not info["world_model"]["called"]


@pytest.mark.parametrize("task_id", ["A01", "E4"])
def test_every_tier_runs_and_truncation_matches_the_task_budget(task_id: str) -> None:
    env = make("floor", backend="scripted")
    _, info = env.reset(seed=0, options={"scenario": task_id})
    budget = floor_tasks.load_task(task_id).max_steps
    assert info["max_steps"] == budget
    for _ in range(budget):
        _, reward, terminated, truncated, info = env.step(
            '{"name": "search_records", "arguments": {"query": "nothing"}}')
        if terminated or truncated:
            break
    assert truncated and info["turn"] == budget and reward == 0.0
    assert info["reward_breakdown"]["checks"] == {"floor_verifier": False}


@pytest.mark.parametrize("vectorised", [False, True])
def test_max_steps_is_the_budget_above_or_below_the_tasks_own(vectorised: bool) -> None:
    """It could only lower a task's budget: twice E4's own gave E4's own."""
    own = floor_tasks.load_task("E4").max_steps
    for max_steps in (own * 2, own - 1):
        if vectorised:
            env = gym.make_vec(env_id("floor"), num_envs=1, max_steps=max_steps,
                               backend="scripted")
            env.reset(seed=0, options={"scenario": "E4"})
            episode = env.unwrapped.episodes[0]
        else:
            env = make("floor", max_steps=max_steps, backend="scripted")
            env.reset(seed=0, options={"scenario": "E4"})
            episode = env.unwrapped.episode
        assert episode.budget == episode.reality.env.max_steps == max_steps
        env.close()
