"""The sim-to-real experiment's PPO agent sees the simulated and the real env alike."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from trainers.experiments import sim_to_real

pytest.importorskip("stable_baselines3")


@pytest.fixture(scope="module")
def s2r():
    return sim_to_real


def _agent(s2r, tmp_path: Path, arm: str, **settings):
    args = s2r.Args(out=tmp_path, agent="ppo", world_model="scripted", ppo_envs=2, ppo_steps=8,
                    ppo_minibatch=16, ppo_epochs=1, ppo_max_length=64, **settings)
    return s2r.PPOAgent(args, s2r.make_task(args), arm, seed=0, world_model="scripted")


def test_sim_and_real_present_one_format(s2r, tmp_path: Path) -> None:
    agent = _agent(s2r, tmp_path, "real-capped+sim")
    real, sim = agent._make("real"), agent._make("sim")
    assert real.observation_space == sim.observation_space == agent.evaluation.observation_space
    assert real.action_space == sim.action_space
    variant = agent.task.train[0]  # a generated C1 record's variant
    real_obs, real_info = real.reset(seed=0, options={"scenario": variant})
    sim_obs, sim_info = sim.reset(seed=0, options={"scenario": variant})
    assert np.array_equal(real_obs["prompt"], sim_obs["prompt"])  # the task, no tool list
    assert sorted(real_info["candidates"]) == sorted(sim_info["candidates"])
    agent.close()


def test_capped_arm_moves_from_real_to_simulated_updates(s2r, tmp_path: Path,
                                                          monkeypatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where SB3's default logger writes
    monkeypatch.delenv("SB3_LOGDIR")  # the suite's own folder for SB3 logs
    agent = _agent(s2r, tmp_path, "real-capped+sim")
    agent.update(real=True)
    assert agent.model.num_timesteps == 16
    agent.update(real=False)
    assert agent.model.num_timesteps == 32 and agent.model.get_env() is agent.envs["sim"]
    assert agent.envs["sim"].envs[0].unwrapped.config.real_counterpart is False  # nothing real
    task = s2r.FloorTask(agent.args)
    calls: dict[str, list[str]] = {}
    assert 0.0 <= s2r.balanced(task, s2r.evaluate(task, agent, calls)) <= 1.0
    tools = {"lookup_record", "submit_decision"}
    named = tools | {f"{tool} (other)" for tool in tools} | {"answer"}
    assert set(calls) == set(task.eval) and all(c and set(c) <= named for c in calls.values())
    agent.close()
    assert not list(scratch.glob("SB3-*"))  # no empty SB3 log folder per update


def test_real_training_draws_only_training_variants(s2r, tmp_path: Path) -> None:
    agent = _agent(s2r, tmp_path, "real")
    env = agent._make("real")
    seen = {env.reset(seed=seed)[1]["scenario_id"] for seed in range(200)}
    assert seen == set(agent.task.train)
    agent.close()


def test_on_mcp_the_twin_and_the_simulation_present_one_format(s2r, tmp_path: Path) -> None:
    from agentworld_envs.wrappers import CandidateOverlapFeatures

    agent = _agent(s2r, tmp_path, "real-capped+sim", task="mcp:inventory", mcp_train=2,
                   mcp_eval=2, ppo_overlap_ngram=3, ppo_candidate_length=64)
    assert isinstance(agent.model.policy.features_extractor, CandidateOverlapFeatures)
    real, sim = agent._make("real"), agent._make("sim")
    assert real.observation_space == sim.observation_space == agent.evaluation.observation_space
    server = agent.task.scenario(agent.task.train[0])
    real_obs, real_info = real.reset(seed=0, options={"scenario": server})
    sim_obs, sim_info = sim.reset(seed=0, options={"scenario": server})
    assert np.array_equal(real_obs["prompt"], sim_obs["prompt"])
    assert sorted(real_info["candidates"]) == sorted(sim_info["candidates"])
    call = next(i for i, c in enumerate(real_info["candidates"]) if c.startswith("{"))
    *_, info = real.step(call)
    assert info["observation_source"] == "real" and info["world_model"]["called"] is False
    agent.update(real=False)
    assert agent.model.get_env() is agent.envs["sim"]
    agent.close()


@pytest.mark.parametrize("arm", ["real-blind", "real"])
def test_the_blind_arm_never_shows_the_policy_a_tool_result(s2r, tmp_path: Path,
                                                            arm: str) -> None:
    assert "real-blind" in s2r.task_arms(s2r.make_task(s2r.Args(out=tmp_path)))
    agent = _agent(s2r, tmp_path, arm)
    for env, options in ((agent._make("real"), None),
                         (agent.evaluation, agent.eval_options(agent.task.eval[0]))):
        first, info = env.reset(seed=0, options=options)
        lookup = next(i for i, c in enumerate(info["candidates"]) if "lookup_record" in c)
        obs, *_ = env.step(lookup)
        assert np.array_equal(obs["prompt"], first["prompt"])
        hidden = np.array_equal(obs["observation"], first["observation"])
        assert hidden == (arm == "real-blind")  # the record the lookup returned, or nothing
    agent.close()
