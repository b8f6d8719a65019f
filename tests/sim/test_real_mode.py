"""mode="real": the simulated env's scenario, prompt and reward, with every step played for real."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
import floor_tasks
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import McpTwin
from agentworld_envs.registration import env_id, make
from agentworld_envs.world.scenario import Control
from floor_tasks.env import FloorEnv


def test_mcp_observations_are_the_twins_and_no_world_model_is_built() -> None:
    scenario = mcp_server_scenario(0).model_copy(update={"controls": []})  # only `error` fires
    error = Control(kind="tool_error", tools=["get_item"], turns=[2])
    env = make("mcp", mode="real", scenarios=[scenario.model_dump()], controls=[error])
    assert env.unwrapped.sim.world_model is None
    _, info = env.reset(seed=0)
    calls = [c for c in info["candidate_actions"] if c.startswith("{")]
    twin = McpTwin(scenario)
    for turn, action in enumerate(sorted(calls) * 2, start=1):
        observation, reward, terminated, _, info = env.step(action)
        fired = [error] if turn == 2 and json.loads(action)["name"] == "get_item" else []
        assert observation == twin.step(action, fired).observation == info["real_observation"]
        assert info["world_model"]["called"] is False
        assert info["observation_source"] == "real"
        assert not terminated and reward == 0.0
    assert "internal_error" in env.unwrapped.episode.transcript[1]["observation"]


def test_mcp_real_mode_rewards_the_solution_and_not_a_wrong_answer() -> None:
    scenario = mcp_server_scenario(3)
    solution = [scenario.candidate_actions[i] for i in scenario.solution]
    wrong = next(c for i, c in enumerate(scenario.candidate_actions)
                 if c.startswith("The answer") and i not in scenario.solution)
    for answer, expected in ((solution[-1], 1.0), (wrong, 0.0)):
        env = make("mcp", mode="real", scenarios=[scenario.model_dump()], controls=[])
        env.reset(seed=0)
        for action in [*solution[:-1], answer]:
            _, reward, terminated, _, info = env.step(action)
        assert terminated and reward == expected
        assert info["reward_breakdown"]["agree"] is True


@pytest.mark.parametrize("variant", ["v0", "i1"])
def test_floor_real_mode_scores_as_the_agentfloor_env(variant: str) -> None:
    env = make("floor", mode="real", scenarios=[f"C1/{variant}"])
    real = FloorEnv("C1", variant=variant)
    env.reset(seed=0)
    real.reset(seed=0)
    for action in floor_tasks.solution("C1", variant):
        observation, reward, terminated, _, info = env.step(action)
        expected, real_reward, real_terminated, *_ = real.step(action)
        assert json.loads(observation)["result"] == json.loads(expected)["result"]
        assert (reward, terminated) == (real_reward, real_terminated)
    assert reward == 1.0 and info["reward_breakdown"]["source"] == "simulated"


def test_a_wrong_branch_is_rejected_in_real_mode_as_in_agentfloor() -> None:
    env, real = make("floor", mode="real", scenarios=["C1/i1"]), FloorEnv("C1", variant="i1")
    env.reset(seed=0)
    real.reset(seed=0)
    lookup, submit = floor_tasks.solution("C1", "i1")
    wrong = submit.replace("assign_fallback", "assign_primary")
    for action in (lookup, wrong):
        observation, reward, terminated, *_ = env.step(action)
        expected, *outcome = real.step(action)[:3]
        assert json.loads(observation)["error"] == json.loads(expected)["error"]
        assert [reward, terminated] == outcome
    assert json.loads(observation)["error"]["type"] == "submission_rejected"


def test_real_mode_needs_a_real_counterpart_and_a_judge_for_judged_rewards() -> None:
    with pytest.raises(ValueError, match='mode="real" needs a real counterpart'):
        make("search", mode="real").reset(seed=0)
    with pytest.raises(ValueError, match="pass judge_backend"):
        make("mcp", mode="real", scenarios="generated", reward_kind="judge").reset(seed=0)
    judged = make("mcp", mode="real", scenarios="generated", reward_kind="judge",
                  judge_backend={"name": "scripted", "rules": [
                      {"match": ".", "reply": '{"score": 5, "reason": "ok"}'}]})
    _, info = judged.reset(seed=0)
    answer = next(c for c in info["candidate_actions"] if not c.startswith("{"))
    _, reward, terminated, _, info = judged.step(answer)
    assert terminated and reward == 1.0  # the judge's top score, asked of judge_backend
    assert info["reward_breakdown"]["judge"] == 1.0 and not info["reward_breakdown"]["judge_error"]


def test_vector_env_in_real_mode_steps_without_a_model() -> None:
    envs = gym.make_vec(env_id("mcp"), num_envs=3, mode="real", scenarios="generated")
    _, infos = envs.reset(seed=0)
    actions = [next(c for c in cands if c.startswith("{"))
               for cands in infos["candidate_actions"]]
    observations, *_, infos = envs.step(actions)
    assert all(json.loads(o) for o in observations)
    assert list(infos["observation_source"]) == ["real"] * 3
    envs.close()
