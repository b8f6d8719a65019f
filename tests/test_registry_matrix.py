"""One test matrix over every registered env of the suite.

The matrix reads the registries after importing the three packages: every Gymnasium id in the
``AgentFloor`` and ``AgentWorld`` namespaces, and every PettingZoo id under ``team_envs/``. An env
registered later joins the matrix without editing this file, and an env that fails a check fails
its test: nothing is skipped except the determinism rollout of an env whose spec declares
``nondeterministic=True``, and that skip is reported. The simulated ``AgentWorld`` envs run on
the ``scripted`` backend: the matrix checks env mechanics, not a world model.

PettingZoo's own conformance tests (``api_test``, ``parallel_api_test``, the seed tests) run
once, in ``tests/team_envs/test_pettingzoo_api.py``, over every registered team env and its
variants.
"""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from pettingzoo.env_registry.registration import aec_registry, parallel_registry

import floor_tasks
import team_envs
from agentworld_envs.registration import ENV_IDS as WORLD_IDS
from agentworld_envs.wrappers import wrap_for_sb3
from tests.helpers.scripted_envs import make_scripted

GYM_IDS = sorted(env_id for env_id, spec in gym.registry.items()
                 if spec.namespace in ("AgentFloor", "AgentWorld"))
TEAM_IDS = sorted({env_id for env_id in (*aec_registry, *parallel_registry)
                   if env_id.startswith("team_envs/")})


def _acts_in_free_text(env_id: str) -> bool:
    """Text teams act in free text (LLM agents): no finite action set for an SB3 policy."""
    env = pettingzoo.make("parallel", env_id)
    return any(isinstance(env.action_space(a), gym.spaces.Text) for a in env.possible_agents)


TEXT_TEAM_IDS = [env_id for env_id in TEAM_IDS if _acts_in_free_text(env_id)]
SB3_TEAM_IDS = [env_id for env_id in TEAM_IDS if env_id not in TEXT_TEAM_IDS]
SEED = 42
STEPS = 40
MAX_CANDIDATES = 64
MAX_LENGTH = 64


def test_registries_hold_every_package_env() -> None:
    assert {floor_tasks.env_id(task_id) for task_id in floor_tasks.TASK_IDS} <= set(GYM_IDS)
    assert set(WORLD_IDS) <= set(GYM_IDS)
    assert set(team_envs.ENV_IDS) <= set(TEAM_IDS)


# --- Gymnasium envs --------------------------------------------------------------------------

def _pick_action(env: gym.Env, rng: np.random.Generator, step: int) -> Any:
    """Mostly a random admissible candidate; every seventh step, random text from the space."""
    if step % 7 == 6:
        return env.action_space.sample()
    candidates = env.get_wrapper_attr("candidate_actions")()
    return candidates[int(rng.integers(len(candidates)))]


def _rollout(env: gym.Env, seed: int, steps: int = STEPS, *, reset: bool = True) -> list:
    """Transitions of a seeded rollout (from a reset, or from the current state); asserts every
    observation lies in the space."""
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    out = []
    if reset:
        obs, info = env.reset(seed=seed)
        assert obs in env.observation_space
        out.append((obs, info))
    for step in range(steps):
        transition = env.step(_pick_action(env, rng, step))
        assert transition[0] in env.observation_space, f"step {step}: observation not in space"
        out.append(transition)
        if transition[2] or transition[3]:
            obs, info = env.reset()
            assert obs in env.observation_space
            out.append((obs, info))
    return out


@pytest.mark.parametrize("env_id", GYM_IDS)
def test_gymnasium_check_env(env_id: str) -> None:
    """Gymnasium's env checker, with no warning at all, unrendered and in every declared render
    mode (the one place it runs on these ids)."""
    env = make_scripted(env_id, disable_env_checker=True).unwrapped
    if env_id in WORLD_IDS:
        assert env.sim.world_model.describe()["name"] == "scripted"
    for render_mode in (None, *env.metadata["render_modes"]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(make_scripted(env_id, disable_env_checker=True,
                                    render_mode=render_mode).unwrapped)
        assert [str(w.message) for w in caught] == [], render_mode


@pytest.mark.parametrize("env_id", GYM_IDS)
def test_a_failed_first_reset_leaves_the_env_playable(env_id: str) -> None:
    """A first reset refused for a bad option, then a good reset: the env steps (Gymnasium's
    passive checker, were ``gym.make`` to add it, would raise TypeError at that first step)."""
    env = make_scripted(env_id)
    bad = {"variant": "v99"} if env_id.startswith("AgentFloor/") else {"scenario": "no-such"}
    with pytest.raises(ValueError):
        env.reset(seed=SEED, options=bad)
    env.reset(seed=SEED)
    assert len(_rollout(env, SEED, 3, reset=False)) >= 3


@pytest.mark.parametrize("env_id", GYM_IDS)
def test_determinism_rollout_with_observations_in_space(env_id: str) -> None:
    first, second = make_scripted(env_id), make_scripted(env_id)
    trajectory = _rollout(first, SEED)
    if gym.spec(env_id).nondeterministic:
        pytest.skip(f"{env_id} is registered nondeterministic=True; spaces were checked")
    assert data_equivalence(trajectory, _rollout(second, SEED))


@pytest.mark.parametrize("env_id", GYM_IDS)
def test_pickle_round_trip(env_id: str) -> None:
    env = make_scripted(env_id)
    clone = pickle.loads(pickle.dumps(env))
    assert data_equivalence(_rollout(env, SEED, 10), _rollout(clone, SEED, 10))
    clone = pickle.loads(pickle.dumps(env))  # mid-episode, or just after a reset
    assert data_equivalence(_rollout(env, SEED, 10, reset=False),
                            _rollout(clone, SEED, 10, reset=False))


@pytest.mark.parametrize("observation", ["dict", "box"])
@pytest.mark.parametrize("env_id", GYM_IDS)
def test_sb3_check_env_on_wrapped_env(env_id: str, observation: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = wrap_for_sb3(make_scripted(env_id), max_candidates=MAX_CANDIDATES, max_length=MAX_LENGTH,
                       observation=observation)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env)
    assert [str(w.message) for w in caught] == []
    obs, info = env.reset(seed=SEED)
    env.action_space.seed(SEED)
    for step in range(STEPS):
        assert obs in env.observation_space, f"step {step}: observation not in space"
        mask = info["action_mask"].astype(np.int8)
        obs, _, terminated, truncated, info = env.step(env.action_space.sample(mask))
        if terminated or truncated:
            obs, info = env.reset()


# --- PettingZoo team envs --------------------------------------------------------------------

@pytest.mark.parametrize("env_id", TEAM_IDS)
def test_team_env_is_registered_in_both_forms(env_id: str) -> None:
    assert env_id in aec_registry and env_id in parallel_registry


def test_only_llm_text_teams_are_outside_sb3() -> None:
    assert {i.split("/")[1] for i in TEXT_TEAM_IDS} <= {
        "arithmetic_chain-v0", "logic_grid-v0", "countdown-v0", "floor_team-v0", "reasoning-v0"}
    assert len(SB3_TEAM_IDS) >= 3


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("env_id", SB3_TEAM_IDS)
def test_sb3_parameter_sharing_on_team_env(env_id: str) -> None:
    from stable_baselines3 import PPO

    from agentworld_envs.wrappers import ParameterSharingVecEnv

    def rollout() -> list:
        venv = ParameterSharingVecEnv(lambda: pettingzoo.make("parallel", env_id), num_copies=2,
                                      max_length=MAX_LENGTH, max_candidates=MAX_CANDIDATES)
        venv.seed(SEED)
        venv.action_space.seed(SEED)
        out = [venv.reset()]
        for _ in range(STEPS):
            actions = np.stack([venv.action_space.sample() for _ in range(venv.num_envs)])
            out.append(venv.step(actions)[:3])
        for obs in (step if isinstance(step, dict) else step[0] for step in out):
            for slot in range(venv.num_envs):
                assert {key: value[slot] for key, value in obs.items()} in venv.observation_space
        return out

    assert data_equivalence(rollout(), rollout())
    venv = ParameterSharingVecEnv(lambda: pettingzoo.make("parallel", env_id),
                                  max_length=MAX_LENGTH, max_candidates=MAX_CANDIDATES)
    model = PPO("MultiInputPolicy", venv, n_steps=8, batch_size=8, n_epochs=1, seed=SEED,
                device="cpu").learn(8 * venv.num_envs)
    assert model.num_timesteps == 8 * venv.num_envs
