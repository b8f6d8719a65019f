"""The natively batched vector env: one call per step, isolation, autoreset, async twin."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.domains import get_domain
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.registration import env_id, make
from agentworld_envs.sim.vector import AgentWorldVectorEnv
from tests.helpers.witness import witness_backend


def test_make_vec_builds_the_native_vector_env_with_its_autoreset_mode() -> None:
    envs = gym.make_vec(env_id("mcp"), num_envs=4, backend="scripted")
    assert isinstance(envs.unwrapped, AgentWorldVectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert envs.unwrapped.max_steps == gym.spec(env_id("mcp")).max_episode_steps
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 4 and all(o in envs.single_observation_space for o in obs)
    assert infos["_scenario_id"].all()
    with pytest.raises(ValueError, match="same_step"):
        gym.make_vec(env_id("mcp"), num_envs=2, backend="scripted", autoreset_mode="next_step")


def test_every_step_is_one_batched_backend_call() -> None:
    backend = ScriptedBackend(keep_requests=True)
    envs = gym.make_vec(env_id("terminal"), num_envs=5, backend=backend)
    envs.reset(seed=0)
    wait = '[{"keystrokes": "", "duration": 1}]'
    for _ in range(3):
        envs.step([wait] * 5)
    assert [len(batch) for batch in backend.batches] == [5, 5, 5]
    envs.step([wait, "[]", "not json", wait, "[]"])  # invalid actions skip the model
    assert len(backend.batches[-1]) == 4  # the terminal's completion is the model's to show


def test_sub_envs_are_isolated() -> None:
    backend = ScriptedBackend(keep_requests=True)
    envs = gym.make_vec(env_id("search"), num_envs=3, backend=backend)
    envs.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    actions = [f'{{"name": "web_search", "arguments": {{"queries": ["query of env {i}"]}}}}'
               for i in range(3)]
    envs.step(actions)
    envs.step(["I give up.", actions[1], actions[2]])
    envs.step(actions)
    first, second, third = backend.batches
    for i, request in enumerate(first):
        assert f"query of env {i}" in request.messages[-1]["content"]
    for request, owner in zip(third, range(3), strict=True):
        history = " ".join(m["content"] for m in request.messages)
        others = [f"query of env {j}" for j in range(3) if j != owner]
        assert not any(o in history for o in others)
    # env 0 ended on step 2, so its third request starts a fresh episode at turn 1
    assert third[0].messages[-1]["content"].startswith("### Turn 1")
    assert third[1].messages[-1]["content"].startswith("### Turn 3")
    assert len({r.sampling.seed for r in first}) == 3


def test_sub_env_i_plays_exactly_like_a_single_env_seeded_seed_plus_i() -> None:
    vector_backend, single_backend = (ScriptedBackend(keep_requests=True) for _ in range(2))
    envs = gym.make_vec(env_id("mcp"), num_envs=3, backend=vector_backend)
    obs, infos = envs.reset(seed=10)
    single = make("mcp", backend=single_backend)
    single_obs, single_info = single.reset(seed=12)
    assert obs[2] == single_obs and infos["scenario_id"][2] == single_info["scenario_id"]
    calls = [c for c in single_info["candidate_actions"] if parse_action(c).calls][:2]
    assert len(calls) == 2  # tool calls: the model is asked and the episode goes on
    for action in calls:
        vector_obs = envs.step(["done", "done", action])[0]  # envs 0 and 1 ask no model
        assert vector_obs[2] == single.step(action)[0]
    ours = [batch[0].to_dict() for batch in vector_backend.batches]
    theirs = [batch[0].to_dict() for batch in single_backend.batches]
    assert ours == theirs and len(ours) == 2


def test_same_step_autoreset_returns_final_obs_and_the_next_episode() -> None:
    scenario = get_domain("web").builtin["web-wiki-capital"]
    envs = gym.make_vec(env_id("web"), num_envs=2, backend=witness_backend(scenario))
    obs, _ = envs.reset(seed=0, options={"scenario": scenario.id})
    envs.step(["fill('701', 'Orvandel')"] * 2)  # the witness shows the answer
    obs, rewards, terminated, truncated, infos = envs.step(
        ["send_msg_to_user('The capital is Serra Vane.')", "noop()"])
    assert terminated.tolist() == [True, False] and rewards.tolist() == [1.0, 0.0]
    assert infos["_final_obs"].tolist() == [True, False]
    final = infos["final_info"]
    assert final["termination"][0] == "message" and final["reward_breakdown"]["reward"][0] == 1.0
    assert infos["_domain"][0] and not infos["_domain"][1]  # env 0's reset info
    assert "Current state:" in obs[0] and infos["turn"][1] == 2
    obs, rewards, terminated, truncated, infos = envs.step(["noop()", "noop()"])
    assert not terminated.any() and infos["turn"].tolist() == [1, 3]


def test_truncation_in_the_vector_env_uses_the_budget() -> None:
    envs = gym.make_vec(env_id("os"), num_envs=2, backend="scripted", max_episode_steps=2)
    envs.reset(seed=0)
    envs.step(["WAIT", "WAIT"])
    _, _, terminated, truncated, infos = envs.step(["WAIT", "DONE"])
    assert truncated.tolist() == [True, False] and terminated.tolist() == [False, True]
    assert infos["final_info"]["termination"].tolist() == ["step_budget_exhausted", "task_complete"]


def test_disabled_autoreset_leaves_resets_to_the_caller() -> None:
    envs = gym.make_vec(env_id("android"), num_envs=2, backend="scripted",
                        autoreset_mode="disabled")
    assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    envs.reset(seed=0, options={"scenario": "android-battery-level"})
    answer = '{"action_type": "answer", "text": "62"}'
    _, rewards, terminated, _, infos = envs.step([answer, '{"action_type": "wait"}'])
    assert terminated.tolist() == [True, False] and "final_obs" not in infos
    obs, _, terminated, _, infos = envs.step([answer, '{"action_type": "wait"}'])
    assert terminated[0] and infos["invalid_action"][0] and "reset()" in obs[0]
    obs, infos = envs.reset(options={"reset_mask": np.array([True, False])})
    assert infos["_scenario_id"].tolist() == [True, False]
    assert envs.step(['{"action_type": "wait"}'] * 2)[4]["turn"].tolist() == [1, 3]


def test_judges_of_episodes_ending_together_share_one_call() -> None:
    judge = ScriptedBackend([{"match": "## Rubric", "reply":
                              '<final_evaluation>{"score": 4}</final_evaluation>'}],
                            keep_requests=True)
    scenario = get_domain("search").builtin["search-velmora-founder"]
    envs = gym.make_vec(env_id("search"), num_envs=3, backend=witness_backend(scenario),
                        reward_kind="hybrid", judge_backend=judge)
    envs.reset(seed=0, options={"scenario": scenario.id})
    search = '{"name": "web_search", "arguments": {"query": "Velmora"}}'
    envs.step([search] * 3)  # the witness shows the answer
    _, rewards, *_ = envs.step(["Ilsa Toren founded it.", "Oskar Vell.", search])
    assert [len(b) for b in judge.batches] == [2]
    assert rewards.tolist() == [0.75, 0.0, 0.0]


def test_async_vector_env_without_shared_memory_matches_the_native_one() -> None:
    actions = ['[{"keystrokes": "ls -la\\n", "duration": 1}]', "[]", "café ☕"]
    async_envs = gym.make_vec(env_id("terminal"), num_envs=3, vectorization_mode="async",
                              backend="scripted", vector_kwargs={"shared_memory": False})
    native = gym.make_vec(env_id("terminal"), num_envs=3, backend="scripted",
                          autoreset_mode="disabled")
    try:
        assert async_envs.reset(seed=4)[0] == native.reset(seed=4)[0]
        got = async_envs.step(actions)
        want = native.step(actions)
        assert got[0] == want[0]
        assert got[2].tolist() == want[2].tolist() == [False, True, False]
        assert got[4]["invalid_action"].tolist() == [False, False, True]
    finally:
        async_envs.close()
        native.close()
