"""End to end with a real tiny model: served by ``transformers serve``, or in-process; and
record/replay of every world-model call, so episodes rerun bit-identically without a model."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import ENV_IDS, env_id

SAMPLING = {"max_tokens": 8, "temperature": 0.7, "top_k": None}  # transformers serve: no top_k


def play(envs: gym.vector.VectorEnv, turns: int) -> list:
    """Reset with a fixed seed and cycle through each episode's candidate tool calls."""
    record: list = [envs.reset(seed=11)[0]]
    for turn in range(turns):
        calls = [[c for c in e.scenario.candidate_actions if c.startswith("{")]
                 for e in envs.unwrapped.episodes]
        actions = [options[turn % len(options)] for options in calls]
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        record.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist()))
    return [record, [episode.transcript for episode in envs.unwrapped.episodes]]


@pytest.mark.server
def test_vector_env_against_transformers_serve(tiny_server: tuple[str, str]) -> None:
    base_url, model = tiny_server
    envs = gym.make_vec(env_id("terminal"), num_envs=2, sampling=SAMPLING, timeout_s=600,
                        backend={"name": "openai", "model": model, "base_url": base_url,
                                 "api_key_env": None, "max_retries": 0})
    wait = '[{"keystrokes": "", "duration": 1}]'
    envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step([wait] * 2)
    model_info = infos["world_model"]
    assert model_info["called"].all() and (model_info["fault"] == "").all()
    assert (model_info["output_tokens"] > 0).all()
    assert all(o in envs.single_observation_space for o in obs)
    assert not (terminated | truncated).any()
    assert envs.unwrapped.sim.world_model.describe()["base_urls"] == [base_url]
    _, rewards, terminated, _, infos = envs.step(["[]"] * 2)
    assert terminated.all() and rewards.tolist() == [0.0] * 2  # no check-passing keystrokes
    envs.close()


def test_recorded_episodes_replay_bit_identically_without_the_model(tiny_lm_dir: Path,
                                                                    tmp_path: Path) -> None:
    cache = tmp_path / "calls.jsonl"
    live = gym.make_vec(env_id("search"), num_envs=3, sampling=SAMPLING, record_path=str(cache),
                        backend={"name": "hf", "model": str(tiny_lm_dir)})
    recorded = play(live, turns=2)
    live.close()
    assert cache.stat().st_size > 0
    replay = {"name": "replay", "path": str(cache), "model": str(tiny_lm_dir)}
    replayed_envs = gym.make_vec(env_id("search"), num_envs=3, sampling=SAMPLING, backend=replay)
    assert play(replayed_envs, turns=2) == recorded
    assert all(entry["kind"] == "simulate" for t in recorded[1] for entry in t)
    other_seed = gym.make_vec(env_id("search"), num_envs=3, sampling=SAMPLING, backend=replay)
    other_seed.reset(seed=12)
    _, _, _, _, infos = other_seed.step(['{"name": "web_search", "arguments": {"query": "q"}}']
                                        * 3)
    assert (infos["world_model"]["fault"] == "backend_error").all()  # never recorded


@pytest.mark.parametrize("eid", ENV_IDS)
def test_check_env_with_the_replay_backend(eid: str, tiny_lm_dir: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "calls.jsonl")
    hf = {"name": "hf", "model": str(tiny_lm_dir)}
    recording = gym.make(eid, backend=hf, sampling=SAMPLING, record_path=cache)
    # check_env's first step plays action_space.sample() unseeded: both runs draw it alike,
    # else a random action the world model is asked about was never recorded
    recording.unwrapped.action_space.seed(0)
    check_env(recording.unwrapped, skip_render_check=True, skip_close_check=True)
    recording.close()
    replay = gym.make(eid, sampling=SAMPLING,
                      backend={"name": "replay", "path": cache, "model": str(tiny_lm_dir)})
    replay.unwrapped.action_space.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(replay.unwrapped)
