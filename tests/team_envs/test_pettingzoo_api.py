"""PettingZoo conformance of every registered team env: api, parallel, seed tests and more.

This file is the one place PettingZoo's ``api_test``, ``parallel_api_test``, ``seed_test`` and
``parallel_seed_test`` run: over every ``team_envs/`` id in PettingZoo's registries, with its
defaults and with the variants below.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pettingzoo
import pytest
from pettingzoo.env_registry.registration import aec_registry, parallel_registry
from pettingzoo.test import (
    api_test,
    parallel_api_test,
    parallel_seed_test,
    render_test,
    seed_test,
    state_test,
)

import team_envs

REGISTERED = sorted({env_id for env_id in (*aec_registry, *parallel_registry)
                     if env_id.startswith("team_envs/")})
"""Every team env id in PettingZoo's registries (an env registered later joins the tests)."""
# Registered env id -> extra kwargs to also test (beyond the defaults).
VARIANTS = {
    "team_envs/relay-v0": [{"n_agents": 2}, {"n_agents": 8, "message_length": 3}],
    "team_envs/referential-v0": [{"n_agents": 2}, {"n_agents": 5, "window": None}],
    "team_envs/compositional-v0": [{"roles": ["add", "relay", "sub"], "credit": "steps"}],
    "team_envs/arithmetic_chain-v0": [{"n_agents": 8, "handoff": "router"}],
    "team_envs/logic_grid-v0": [{"n_agents": 2, "people": 4, "attributes": 3}],
    "team_envs/countdown-v0": [{"n_agents": 4, "split": True, "handoff": "router"}],
    "team_envs/floor_team-v0": [{"tasks": ["A1", "C3"]}],
    "team_envs/reasoning-v0": [{"task": "chain_sum", "n_agents": 2, "handoff": "router"}],
}
CASES = [(env_id, {}) for env_id in REGISTERED] + [
    (env_id, kwargs) for env_id, variants in VARIANTS.items() for kwargs in variants]
IDS = [f"{env_id.split('/')[1]}-{i}" for i, (env_id, _) in enumerate(CASES)]


def test_every_env_has_a_variant_case() -> None:
    assert set(VARIANTS) == set(team_envs.ENV_IDS) == set(REGISTERED)


@pytest.fixture(autouse=True)
def _quiet_pettingzoo_advice() -> None:
    # api_test warns that Dict/Text spaces "probably should be" Box or Discrete.
    warnings.filterwarnings("ignore", message=".*probably should be.*")
    warnings.filterwarnings("ignore", message=".*not a NumPy array.*")
    warnings.filterwarnings("ignore", message=".*different observation space sizes.*")
    # state_test's advice for a MultiDiscrete state space
    warnings.filterwarnings("ignore", message=".*State space for each environment probably.*")


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=IDS)
def test_api(env_id: str, kwargs: dict) -> None:
    api_test(pettingzoo.make("aec", env_id, **kwargs), num_cycles=30)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=IDS)
def test_parallel_api(env_id: str, kwargs: dict) -> None:
    parallel_api_test(pettingzoo.make("parallel", env_id, **kwargs), num_cycles=30)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=IDS)
def test_seed(env_id: str, kwargs: dict) -> None:
    seed_test(lambda: pettingzoo.make("aec", env_id, **kwargs), num_cycles=30)
    parallel_seed_test(lambda: pettingzoo.make("parallel", env_id, **kwargs), num_cycles=30)


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=IDS)
def test_observations_stay_in_their_spaces_and_reward_arrives_once(env_id: str,
                                                                   kwargs: dict) -> None:
    env = pettingzoo.make("aec", env_id, **kwargs)
    env.reset(seed=1)
    for index, name in enumerate(env.possible_agents):
        env.action_space(name).seed(index)
    rewards = []
    for name in env.agent_iter():
        for other in env.agents:
            assert env.observe(other) in env.observation_space(other)
        _, reward, terminated, truncated, _ = env.last()
        rewards.append(reward)
        env.step(None if terminated or truncated else env.action_space(name).sample())
    assert all(r == 0 for r in rewards[:-len(env.possible_agents)])
    assert len(set(rewards[-len(env.possible_agents):])) == 1


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_same_seed_same_transcript(env_id: str) -> None:
    def transcript() -> str:
        env = pettingzoo.make("aec", env_id, render_mode="ansi")
        env.reset(seed=7)
        for index, name in enumerate(env.possible_agents):
            env.action_space(name).seed(index)
        for name in env.agent_iter():
            *_, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else env.action_space(name).sample())
        return env.unwrapped.render()

    assert transcript() == transcript()


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_pickle_round_trip(env_id: str) -> None:
    env = pettingzoo.make("aec", env_id)
    clone = pickle.loads(pickle.dumps(env))
    env.reset(seed=3)
    clone.reset(seed=3)
    agent = env.agent_selection
    assert env.observe(agent)["text"] == clone.observe(agent)["text"]


def test_agents_are_named_agent_n_and_spaces_are_cached() -> None:
    env = pettingzoo.make("parallel", "team_envs/relay-v0", n_agents=5)
    assert env.possible_agents == [f"agent_{i}" for i in range(5)]
    assert all(env.observation_space(a) is env.observation_space(a) for a in env.possible_agents)
    assert all(env.action_space(a) is env.action_space(a) for a in env.possible_agents)


@pytest.mark.parametrize("n_agents", [1, 9, 2.5])
def test_team_size_is_checked(n_agents: object) -> None:
    with pytest.raises(ValueError, match="n_agents"):
        pettingzoo.make("aec", "team_envs/relay-v0", n_agents=n_agents)


def test_parallel_step_plays_only_the_speaker() -> None:
    env = pettingzoo.make("parallel", "team_envs/relay-v0", n_agents=3)
    _, infos = env.reset(seed=0)
    assert infos["agent_0"]["next_speaker"] == "agent_0"
    _, _, _, _, infos = env.step({"agent_0": [1], "agent_1": [2], "agent_2": [3]})
    assert infos["agent_0"]["message"] == "b" and infos["agent_0"]["next_speaker"] == "agent_1"
    assert "message" not in infos["agent_1"]
    obs, *_ = env.step({"agent_0": [0]})  # agent_1 is silent: an invalid, empty message
    assert obs["agent_2"]["context"].tolist() == [4, 4, 4]


def test_importing_team_envs_does_not_import_torch() -> None:
    code = "import sys, team_envs, team_envs.text.floor_team; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False" and out.stderr == ""


# PettingZoo's full test set, beside api, parallel and seed above. Left out: max_cycles_test
# (it expects every env to run exactly max_cycles cycles; a team's router cap is in multiples
# of the team size and an episode ends when the answerer speaks), bombardment_test (it takes
# step()'s return value for the next observation, which AEC's step() does not return, so no
# conforming env passes it), test_save_obs (image observations only) and
# performance_benchmark (a timing, not a test).
SYMBOLIC = [(env_id, kwargs) for env_id, kwargs in CASES
            if env_id in ("team_envs/relay-v0", "team_envs/referential-v0",
                          "team_envs/compositional-v0")]


@pytest.mark.parametrize(("env_id", "kwargs"), CASES, ids=IDS)
def test_render(env_id: str, kwargs: dict, capsys: pytest.CaptureFixture) -> None:
    render_test(lambda **mode: pettingzoo.make("aec", env_id, **kwargs, **mode))
    env = pettingzoo.make("aec", env_id, render_mode="human", **kwargs)
    env.reset(seed=0)
    capsys.readouterr()
    assert env.render() is None
    assert capsys.readouterr().out == env.unwrapped.episode.render() + "\n"


@pytest.mark.parametrize(("env_id", "kwargs"), SYMBOLIC,
                         ids=[f"{e.split('/')[1]}-{i}" for i, (e, _) in enumerate(SYMBOLIC)])
def test_symbolic_teams_have_a_global_state(env_id: str, kwargs: dict) -> None:
    state_test(pettingzoo.make("aec", env_id, **kwargs),
               pettingzoo.make("parallel", env_id, **kwargs), num_cycles=10)
    env = pettingzoo.make("parallel", env_id, **kwargs)
    env.reset(seed=3)
    task = env.unwrapped.task if hasattr(env, "unwrapped") else env.task
    episode = env.aec_env.episode
    private = np.concatenate([p[0] for p in episode.batch.private])
    length = task.n_agents * task.message_length
    assert env.state()[0] == 0 and (env.state()[1:1 + length] == task.pad).all()
    assert (env.state()[1 + length:] == private).all()
    said = [1] * task.message_length
    env.step({"agent_0": said})
    assert env.state()[0] == 1 and list(env.state()[1:1 + task.message_length]) == said


def test_text_teams_have_no_global_state() -> None:
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=0)
    assert not hasattr(env.unwrapped, "state_space")
    with pytest.raises(NotImplementedError, match="no global state"):
        env.state()


def test_the_parallel_infos_mark_the_one_active_agent() -> None:
    env = pettingzoo.make("parallel", "team_envs/arithmetic_chain-v0", n_agents=3,
                          handoff="router")
    _, infos = env.reset(seed=0)
    speakers = []
    while env.agents:
        active = [name for name, info in infos.items() if info["active"]]
        assert active == [infos["agent_0"]["next_speaker"]]
        speakers.append(active[0])
        # every agent proposes a message; only the active one's is played
        _, _, _, _, infos = env.step({name: f"NEXT: agent_2 from {name}"
                                      for name in env.agents})
    assert speakers == ["agent_0", "agent_2"]
