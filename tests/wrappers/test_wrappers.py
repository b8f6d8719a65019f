"""The Gymnasium wrappers that make text envs numeric, and SB3 on top of them."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

import floor_tasks
from agentworld_envs.protocol.text_space import UnicodeText
from agentworld_envs.wrappers import (
    GIVE_UP_ACTION,
    CandidateMenu,
    DiscreteCandidateActions,
    PromptAwareObservation,
    TokenIdEncoder,
    TokenizeObservation,
    wrap_for_sb3,
)
from floor_tasks.candidates import candidate_actions


def test_import_is_light_and_silent() -> None:
    code = ("import sys, agentworld_envs.wrappers; "
            "print(sorted(m for m in ('torch', 'stable_baselines3', 'transformers') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[2])
    assert done.stdout == "[]\n" and done.stderr == ""


def test_star_import_works_without_stable_baselines3() -> None:
    """Before, ``import *`` raised DependencyNotInstalled: ``__all__`` named the SB3 parts."""
    code = ("import sys; sys.modules['stable_baselines3'] = None\n"
            "from agentworld_envs.wrappers import *\n"
            "assert 'wrap_for_sb3' in dir() and 'ParameterSharingVecEnv' not in dir()\n"
            "import agentworld_envs.wrappers as wrappers\n"
            "try:\n"
            "    wrappers.ParameterSharingVecEnv\n"
            "except Exception as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[2])
    assert done.stdout == ("DependencyNotInstalled ParameterSharingVecEnv needs "
                           'stable-baselines3: pip install "agentworld[rl]"\n')


# --- token ids -------------------------------------------------------------------------------

@pytest.mark.parametrize(("side", "expected"), [("right", b"abcd"), ("left", b"cdef")])
def test_truncation_keeps_the_chosen_end(side: str, expected: bytes) -> None:
    ids = TokenIdEncoder(max_length=4, truncation_side=side).encode_text("abcdef")
    assert bytes(int(i) - 1 for i in ids) == expected


def test_padding_is_zero_and_ids_are_shifted() -> None:
    encoder = TokenIdEncoder(max_length=6)
    ids = encoder.encode_text("é\n")
    assert ids.tolist() == [0xC3 + 1, 0xA9 + 1, ord("\n") + 1, 0, 0, 0]
    assert encoder.encode_text("").tolist() == [0] * 6
    assert ids in encoder.text_space and ids.dtype == np.int64


def test_any_unicode_fits_the_space() -> None:
    encoder = TokenIdEncoder(max_length=32)
    for text in ["", "café ☕ 中文", "\ud800 lone surrogate", "x" * 1000, '{"a": [1, 2]}\n']:
        assert encoder.encode_text(text) in encoder.text_space


def test_dict_spaces_are_encoded_key_by_key() -> None:
    encoder = TokenIdEncoder(max_length=3)
    space = spaces.Dict({"text": UnicodeText(100), "turn": spaces.Discrete(4)})
    encoded = encoder.space(space)
    assert encoded["text"] == encoder.text_space and encoded["turn"] == spaces.Discrete(4)
    value = encoder.encode({"text": "hi", "turn": 2}, space)
    assert value["text"].tolist() == [105, 106, 0] and value["turn"] == 2
    assert value in encoded


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_length"):
        TokenIdEncoder(max_length=0)
    with pytest.raises(ValueError, match="truncation_side"):
        TokenIdEncoder(truncation_side="middle")
    with pytest.raises(ValueError, match="no Text observation"):
        TokenizeObservation(gym.make("CartPole-v1"))


def test_hf_tokenizer_ids_match_the_tokenizer(tiny_lm_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    env = TokenizeObservation(gym.make("AgentFloor/A1-v0"), max_length=16,
                              tokenizer=str(tiny_lm_dir))
    assert env.observation_space == spaces.Box(0, len(tokenizer), (16,), np.int64)
    obs, _ = env.reset(options={"variant": "v0"})
    prompt = floor_tasks.load_task("A1").variant("v0").prompt
    expected = tokenizer(prompt, add_special_tokens=False)["input_ids"][:16]
    assert (obs - 1).tolist() == expected and obs in env.observation_space


# --- candidate actions -----------------------------------------------------------------------

def test_candidates_follow_the_env_list_and_mask() -> None:
    env = DiscreteCandidateActions(gym.make("AgentFloor/C3-v0"), max_candidates=16)
    _, info = env.reset(options={"variant": "i1"})
    expected = env.unwrapped.candidate_actions()
    assert info["candidates"] == expected
    assert set(expected) == set(candidate_actions("C3", "i1", wide=True))
    assert info["action_mask"].tolist() == [True] * len(expected) + [False] * (16 - len(expected))
    assert np.array_equal(env.get_wrapper_attr("action_masks")(), info["action_mask"])
    assert [env.action(i) for i in range(len(expected))] == expected


def test_gold_indices_solve_every_variant() -> None:
    for variant in floor_tasks.load_task("B3").variant_names:
        env = DiscreteCandidateActions(gym.make("AgentFloor/B3-v0"), max_candidates=16)
        _, info = env.reset(options={"variant": variant})
        for action in floor_tasks.solution("B3", variant):
            _, reward, terminated, truncated, info = env.step(info["candidates"].index(action))
            assert info["padding_action"] is False
        assert (reward, terminated, truncated) == (1.0, True, False)


def test_padding_index_plays_the_fallback_deterministically() -> None:
    env = DiscreteCandidateActions(gym.make("AgentFloor/A2-v0"), max_candidates=6,
                                   fallback_action="Nothing to report.")
    env.reset(seed=0)
    assert env.action(5) == "Nothing to report."
    _, reward, terminated, _, info = env.step(5)
    assert info["padding_action"] is True and (reward, terminated) == (0.0, True)
    assert env.unwrapped.trace.final_answer == "Nothing to report."
    assert DiscreteCandidateActions(gym.make("AgentFloor/A2-v0")).fallback_action == GIVE_UP_ACTION


def test_too_many_candidates_raise_instead_of_dropping_one() -> None:
    env = DiscreteCandidateActions(gym.make("AgentFloor/B1-v0"), max_candidates=4)
    with pytest.raises(ValueError, match="do not fit max_candidates=4"):
        env.reset(seed=0)
    with pytest.raises(ValueError, match="outside"):
        CandidateMenu(["a"], size=2, fallback_action="x").action(2)


def test_choosing_before_reset_raises() -> None:
    env = DiscreteCandidateActions(gym.make("AgentFloor/A2-v0"), max_candidates=4)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


# --- prompt and the SB3 stack ----------------------------------------------------------------

def test_prompt_stays_while_observations_change() -> None:
    env = PromptAwareObservation(gym.make("AgentFloor/C3-v0"))
    obs, _ = env.reset(options={"variant": "v2"})
    prompt = obs["prompt"]
    for action in floor_tasks.solution("C3", "v2"):
        next_obs, *_ = env.step(action)
        assert next_obs["prompt"] == prompt and next_obs["observation"] != obs["observation"]
        assert next_obs in env.observation_space
        obs = next_obs


@pytest.mark.parametrize("observation", ["dict", "box"])
def test_stack_spec_rebuilds_an_identical_env(observation: str) -> None:
    env = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=16, max_length=32,
                       observation=observation)
    rebuilt = gym.make(env.spec)
    assert rebuilt.observation_space == env.observation_space
    assert rebuilt.action_space == env.action_space
    for candidate in (env, rebuilt):
        candidate.reset(seed=3)
    assert data_equivalence(env.step(1), rebuilt.step(1))


def test_stack_survives_cloudpickling_mid_episode() -> None:
    """Gymnasium's TimeAwareObservation holds lambdas, so the stack needs cloudpickle (which
    SubprocVecEnv and AsyncVectorEnv use), not the standard library's pickle."""
    env = wrap_for_sb3(gym.make("AgentFloor/B3-v0"), max_candidates=16, max_length=32,
                       observation="box")
    env.reset(seed=1)
    env.step(0)
    copy = pickle.loads(cloudpickle.dumps(env))
    assert data_equivalence(env.step(2), copy.step(2))


def test_dict_observation_holds_prompt_step_and_result() -> None:
    env = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=16, max_length=16)
    obs, info = env.reset(options={"variant": "v0"})
    prompt = floor_tasks.load_task("C3").variant("v0").prompt
    assert bytes(int(i) - 1 for i in obs["prompt"]) == prompt.encode()[:16]
    assert obs["time"].tolist() == [0]
    gold = info["candidates"].index(floor_tasks.solution("C3", "v0")[0])
    obs, *_ = env.step(gold)
    assert obs["time"].tolist() == [1]
    assert bytes(int(i) - 1 for i in obs["observation"]).startswith(b'{"tool_name": "')


def test_bad_observation_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="'dict' or 'box'"):
        wrap_for_sb3(gym.make("AgentFloor/A2-v0"), max_candidates=3, observation="text")


@pytest.mark.parametrize("length", [0, -1])
def test_a_candidate_length_below_one_is_refused(length: int) -> None:
    """Before, 0 silently became ``max_length`` and -1 blamed ``max_length``."""
    with pytest.raises(ValueError, match=f"candidate_length must be an integer >= 1, got {length}"):
        wrap_for_sb3(gym.make("AgentFloor/A2-v0"), max_candidates=3, candidate_length=length)


# --- Stable-Baselines3 -----------------------------------------------------------------------

@pytest.mark.parametrize(("observation", "policy"), [("dict", "MultiInputPolicy"),
                                                     ("box", "MlpPolicy")])
@pytest.mark.usefixtures("one_torch_thread")
def test_sb3_check_env_and_ppo_run(observation: str, policy: str) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env

    env = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=16, max_length=32,
                       observation=observation)
    check_env(env)
    model = PPO(policy, env, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    assert model.num_timesteps == 64 and len(model.ep_info_buffer) > 0


def _greedy_success(model, task_id: str, max_candidates: int) -> float:
    """The greedy policy's success over the task's variants, each at a seeded shuffle."""
    env = wrap_for_sb3(gym.make(floor_tasks.env_id(task_id)), max_candidates=max_candidates,
                       max_length=64)
    variants = floor_tasks.load_task(task_id).variant_names
    solved = 0
    for seed, variant in enumerate(variants):
        obs, _ = env.reset(seed=seed, options={"variant": variant})
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(int(action))
            done = terminated or truncated
        solved += reward == 1.0
    return solved / len(variants)


@pytest.mark.usefixtures("one_torch_thread")
def test_ppo_scoring_the_observed_candidates_learns_a_shuffled_task() -> None:
    """B2's gold steps sit at a new index in every episode: the policy must read candidates."""
    from stable_baselines3 import PPO

    from agentworld_envs.wrappers import CandidateScoringPolicy

    env = wrap_for_sb3(gym.make("AgentFloor/B2-v0"), max_candidates=8, max_length=64)
    model = PPO(CandidateScoringPolicy, env, n_steps=64, batch_size=64, n_epochs=10,
                learning_rate=1e-3, gamma=0.9, normalize_advantage=False, seed=0, device="cpu")
    assert _greedy_success(model, "B2", 8) < 1.0
    model.learn(1024)
    assert _greedy_success(model, "B2", 8) == 1.0


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("features", [{}, {"features_extractor_class": "overlap"}])
def test_candidate_scores_follow_the_candidates_not_their_indices(features: dict) -> None:
    import torch
    from stable_baselines3 import PPO

    from agentworld_envs.wrappers import CandidateOverlapFeatures, CandidateScoringPolicy

    env = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=16, max_length=32)
    if features:
        features = {"features_extractor_class": CandidateOverlapFeatures}
    policy = PPO(CandidateScoringPolicy, env, n_steps=8, batch_size=8, seed=0,
                 device="cpu", policy_kwargs=features).policy
    obs, info = env.reset(seed=0)
    rows = len(info["candidates"])
    order = np.r_[np.random.default_rng(0).permutation(rows), np.arange(rows, 16)]
    permuted = {**obs, "candidates": obs["candidates"].reshape(16, -1)[order].reshape(-1)}
    with torch.no_grad():
        logits = [policy.get_distribution(policy.obs_to_tensor(o)[0]).distribution.logits[0]
                  for o in (obs, permuted)]
    assert torch.allclose(logits[1], logits[0][order], atol=1e-5)
    assert (logits[0][rows:] < -1e8).all() and (logits[0][:rows] > -1e8).all()


def _occurs_reference(candidates: np.ndarray, text: np.ndarray, n: int) -> np.ndarray:
    """Whether the n ids starting at each candidate position, none of them padding, occur
    in the text: the plain loop that ``ngram_codes`` and ``occurs_in`` must agree with."""
    grams = {tuple(text[i:i + n]) for i in range(len(text) - n + 1) if 0 not in text[i:i + n]}
    out = np.zeros(candidates.shape, dtype=bool)
    for row, ids in enumerate(candidates):
        for i in range(len(ids) - n + 1):
            window = tuple(ids[i:i + n])
            out[row, i] = 0 not in window and window in grams
    return out


@pytest.mark.parametrize("seed", range(6))
def test_overlap_flags_are_exact_n_gram_matches(seed: int) -> None:
    import torch

    from agentworld_envs.wrappers.candidate_policy import ngram_codes, occurs_in

    rng = np.random.default_rng(seed)
    n, vocab = int(rng.integers(1, 5)), 5  # a small vocabulary, so windows repeat often
    text = rng.integers(0, vocab, (2, 40))
    candidates = rng.integers(0, vocab, (2, 3, 12))
    candidates[:, 1, 7:] = 0  # a short candidate, padded
    flags = occurs_in(ngram_codes(torch.as_tensor(candidates), n, vocab, padding=-1),
                      ngram_codes(torch.as_tensor(text), n, vocab, padding=-2)).numpy()
    for b in range(2):
        assert np.array_equal(flags[b], _occurs_reference(candidates[b], text[b], n))


@pytest.mark.usefixtures("one_torch_thread")
def test_overlap_features_flag_the_prompts_record_in_a_candidate() -> None:
    import torch

    from agentworld_envs.wrappers import CandidateOverlapFeatures
    from agentworld_envs.wrappers.candidate_policy import ngram_codes, occurs_in

    env = wrap_for_sb3(gym.make("AgentFloor/C1-v0"), max_candidates=18, max_length=256,
                       candidate_length=96)
    obs, info = env.reset(seed=0, options={"variant": "v0"})  # the prompt names CMP-31
    extractor = CandidateOverlapFeatures(env.observation_space, ngram=5)
    assert extractor.texts == ["observation", "prompt"] and extractor.others == ["time"]
    ids = torch.as_tensor(obs["candidates"]).view(1, 18, 96)
    flags = occurs_in(ngram_codes(ids, 5, extractor.vocab, padding=-1),
                      ngram_codes(torch.as_tensor(obs["prompt"])[None], 5, extractor.vocab,
                                  padding=-2))[0].sum(1)
    lookups = {re.search(r"CMP-\d+", c)[0]: int(flags[i])
               for i, c in enumerate(info["candidates"]) if "lookup_record" in c}
    assert lookups["CMP-31"] == max(lookups.values()) > min(lookups.values())
    assert int(flags[len(info["candidates"]):].sum()) == 0  # padding rows match nothing
    features = extractor({k: torch.as_tensor(v)[None] for k, v in obs.items()})
    assert features.shape == (1, extractor.features_dim)
    with pytest.raises(ValueError, match="fit 63 bits"):
        CandidateOverlapFeatures(env.observation_space, ngram=8)
