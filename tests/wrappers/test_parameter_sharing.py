"""PettingZoo team envs as one SB3 VecEnv (parameter sharing)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo import ParallelEnv
from pettingzoo.test import parallel_api_test
from stable_baselines3.common.vec_env import VecMonitor

import team_envs  # noqa: F401 - registers team_envs/*
from agentworld_envs.protocol.text_space import UnicodeText
from agentworld_envs.wrappers import ParameterSharingVecEnv

SECRETS = ("red", "green", "blue")


class EchoTeam(ParallelEnv):
    """Two agents see a secret word as text and must both choose it from a candidate list.

    The list of ``agent_1`` is reversed, so a shared policy must read ``agent_index``. Both get
    reward 1 when both choose the secret; the episode lasts one step, or ``rounds`` steps, or
    ends early for ``agent_1`` alone when ``uneven``.
    """

    metadata = {"name": "echo_team_v0", "render_modes": []}
    render_mode = None

    def __init__(self, rounds: int = 1, uneven: bool = False) -> None:
        self.possible_agents = ["agent_0", "agent_1"]
        self.rounds, self.uneven = rounds, uneven
        self.agents: list[str] = []

    @functools.cache  # noqa: B019 - one space object per agent, as PettingZoo asks
    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Dict({"text": UnicodeText(64), "turn": spaces.Discrete(self.rounds + 1)})

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Space:
        return UnicodeText(64)

    def candidate_actions(self, agent: str) -> list[str]:
        return list(SECRETS) if agent == "agent_0" else list(reversed(SECRETS))

    def _observations(self) -> dict[str, Any]:
        return {agent: {"text": f"secret: {self.secret}", "turn": self.turn}
                for agent in self.agents}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None or not hasattr(self, "rng"):
            self.rng = np.random.default_rng(seed)
        self.secret = SECRETS[int(self.rng.integers(len(SECRETS)))]
        self.agents, self.turn = list(self.possible_agents), 0
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        self.turn += 1
        won = all(action == self.secret for action in actions.values())
        rewards = {agent: float(won) for agent in self.agents}
        done = self.turn >= self.rounds
        terms = {agent: done or (self.uneven and agent == "agent_1") for agent in self.agents}
        truncs = {agent: False for agent in self.agents}
        infos = {agent: {"chose": actions[agent]} for agent in self.agents}
        observations = self._observations()
        self.agents = [agent for agent in self.agents if not terms[agent]]
        return observations, rewards, terms, truncs, infos


def test_echo_team_is_a_valid_parallel_env() -> None:
    parallel_api_test(EchoTeam(rounds=3), num_cycles=10)


def test_slots_are_copy_major_and_text_is_encoded() -> None:
    venv = ParameterSharingVecEnv(EchoTeam, num_copies=2, max_length=12)
    assert venv.num_envs == 4 and venv.action_space == spaces.Discrete(32)
    venv.seed(7)
    obs = venv.reset()
    assert obs["agent_index"].tolist() == [0, 1, 0, 1]
    texts = [bytes(int(i) - 1 for i in row if i).decode() for row in obs["text"]]
    assert texts[0] == texts[1] and texts[2] == texts[3] and texts[0].startswith("secret: ")
    assert all(info["action_mask"].sum() == 3 for info in venv.reset_infos)


def test_candidates_reach_each_agent_and_pay_the_team() -> None:
    venv = ParameterSharingVecEnv(EchoTeam, max_candidates=4)
    venv.seed(0)
    venv.reset()
    secret = venv.envs[0].secret
    choice = [SECRETS.index(secret), list(reversed(SECRETS)).index(secret)]
    _, rewards, dones, infos = venv.step(np.array(choice))
    assert rewards.tolist() == [1.0, 1.0] and dones.tolist() == [True, True]
    assert [info["chose"] for info in infos] == [secret, secret]
    assert all("terminal_observation" in info and not info["TimeLimit.truncated"]
               for info in infos)
    _, rewards, _, infos = venv.step(np.array([3, 0]))
    assert infos[0]["padding_action"] and infos[0]["chose"] == "I could not determine the answer."
    assert rewards.tolist() == [0.0, 0.0]
    assert venv.action_masks().tolist() == [[True, True, True, False]] * 2


@pytest.mark.parametrize(("actions", "said"), [
    ([0, 0, 0, 9], "action index 9 is outside 0..3"),
    ([0, 0], "one action per slot \\(4\\), got an array of shape \\(2,\\)"),
], ids=["index past max_candidates", "too few actions"])
def test_a_bad_action_raises_before_any_copy_steps(actions: list[int], said: str) -> None:
    """Before, copy 0 had stepped (its rewards and observations lost) when copy 1's bad
    action raised, and the copies' episodes went out of step."""
    venv = ParameterSharingVecEnv(functools.partial(EchoTeam, rounds=3), num_copies=2,
                                  max_candidates=4)
    venv.seed(0)
    venv.reset()
    with pytest.raises(ValueError, match=said):
        venv.step(np.array(actions))
    assert [env.turn for env in venv.envs] == [0, 0]
    venv.step(np.array([0, 0, 0, 0]))
    assert [env.turn for env in venv.envs] == [1, 1]


def test_same_seed_same_rollout() -> None:
    def rollout() -> list:
        venv = ParameterSharingVecEnv(EchoTeam, num_copies=2)
        venv.seed(3)
        out = [venv.reset()]
        for step in range(6):
            out.append(venv.step(np.array([step % 3, 0, 1, step % 2]))[:3])
        return out

    assert data_equivalence(rollout(), rollout())


def test_agents_ending_apart_raise() -> None:
    venv = ParameterSharingVecEnv(functools.partial(EchoTeam, rounds=3, uneven=True))
    venv.reset()
    with pytest.raises(RuntimeError, match="end together"):
        venv.step(np.array([0, 0]))


def test_different_action_spaces_are_refused() -> None:
    class Mixed(EchoTeam):
        def action_space(self, agent: str) -> spaces.Space:
            return spaces.Discrete(2 if agent == "agent_0" else 3)

    with pytest.raises(ValueError, match="one action space"):
        ParameterSharingVecEnv(Mixed)


def test_text_actions_without_candidates_are_refused() -> None:
    class NoCandidates(EchoTeam):
        candidate_actions = None

    with pytest.raises(TypeError, match="candidate_actions"):
        ParameterSharingVecEnv(NoCandidates)


def test_missing_dict_keys_are_blank_for_agents_without_them() -> None:
    venv = ParameterSharingVecEnv(lambda: pettingzoo.make("parallel", "team_envs/relay-v0"))
    sender_only = [agent for agent in venv.agents
                   if "private" not in venv.envs[0].observation_space(agent).spaces]
    assert sender_only, "relay should have agents without a private key"
    obs = venv.reset()
    for agent in sender_only:
        assert obs["private"][venv.agents.index(agent)].tolist() == [0]
    for slot in range(venv.num_envs):
        assert {key: value[slot] for key, value in obs.items()} in venv.observation_space


def test_parts_that_differ_between_agents_split_by_space() -> None:
    venv = ParameterSharingVecEnv(lambda: pettingzoo.make(
        "parallel", "team_envs/referential-v0"))
    privates = {str(venv.envs[0].observation_space(agent)["private"]) for agent in venv.agents
                if "private" in venv.envs[0].observation_space(agent).spaces}
    assert len(privates) == 2
    assert {"private_0", "private_1"} <= set(venv.observation_space.spaces)
    assert "private" not in venv.observation_space.spaces
    venv.seed(0)
    obs = venv.reset()
    for slot in range(venv.num_envs):
        assert {key: value[slot] for key, value in obs.items()} in venv.observation_space


class ShortMenuTeam(EchoTeam):
    """``agent_1`` has one candidate fewer, so the slots' masks differ."""

    def candidate_actions(self, agent: str) -> list[str]:
        return super().candidate_actions(agent)[:3 if agent == "agent_0" else 2]


@pytest.mark.parametrize("wrap", [lambda venv: venv, VecMonitor], ids=["bare", "VecMonitor"])
def test_sb3_contrib_masking_calls_get_one_mask_per_slot(wrap: Any) -> None:
    venv = wrap(ParameterSharingVecEnv(ShortMenuTeam, num_copies=2, max_candidates=4))
    venv.reset()
    expected = [[True, True, True, False], [True, True, False, False]] * 2
    # sb3_contrib.common.maskable.utils: is_masking_supported, then get_action_masks
    assert venv.has_attr("action_masks")
    assert np.stack(venv.env_method("action_masks")).tolist() == expected
    assert [mask().tolist() for mask in venv.get_attr("action_masks")] == expected
    assert np.stack(venv.env_method("action_masks", indices=[1, 2])).tolist() == expected[1:3]
    venv.step(np.zeros(4, dtype=np.int64))
    assert np.stack(venv.env_method("action_masks")).tolist() == expected
    numeric = ParameterSharingVecEnv(lambda: pettingzoo.make("parallel", "team_envs/relay-v0"))
    assert not wrap(numeric).has_attr("action_masks")


class CountingTeam(EchoTeam):
    """Records every render, method call and attribute set it gets."""

    metadata = {"name": "counting_team_v0", "render_modes": ["human"], "render_fps": 1}

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__()
        self.render_mode, self.calls = render_mode, []

    def render(self) -> None:
        self.calls.append("render")

    def poke(self, value: int) -> tuple[int, int]:
        self.calls.append(f"poke {value}")
        return id(self), value

    @property
    def label(self) -> str:
        return self.calls[-1]

    @label.setter
    def label(self, value: str) -> None:
        self.calls.append(f"label {value}")


def test_methods_attributes_and_render_reach_each_copy_once() -> None:
    venv = ParameterSharingVecEnv(functools.partial(CountingTeam, "human"), num_copies=2)
    venv.reset()
    copies = [id(env) for env in venv.envs]
    assert venv.env_method("poke", 1) == [(copies[0], 1)] * 2 + [(copies[1], 1)] * 2
    assert venv.env_method("poke", 2, indices=[1, 2, 3]) == [(copies[0], 2)] + [(copies[1], 2)] * 2
    venv.set_attr("label", "x")
    venv.render()
    assert [env.calls for env in venv.envs] == [["poke 1", "poke 2", "label x", "render"]] * 2


def test_metadata_keeps_sb3s_render_modes() -> None:
    quiet = ParameterSharingVecEnv(CountingTeam)
    assert quiet.render_mode is None and quiet.metadata["render_modes"] == []
    assert quiet.metadata["render_fps"] == 1
    assert ParameterSharingVecEnv(functools.partial(CountingTeam, "human")).metadata[
        "render_modes"] == ["human"]


@pytest.mark.usefixtures("one_torch_thread")
def test_ppo_learns_through_parameter_sharing() -> None:
    from stable_baselines3 import PPO

    from agentworld_envs.wrappers import TokenEmbeddingExtractor

    def make_venv() -> ParameterSharingVecEnv:
        return ParameterSharingVecEnv(EchoTeam, num_copies=4, max_length=16, max_candidates=3)

    model = PPO("MultiInputPolicy", make_venv(), n_steps=16, batch_size=64, n_epochs=10,
                learning_rate=1e-3, normalize_advantage=False, seed=0, device="cpu",
                policy_kwargs={"features_extractor_class": TokenEmbeddingExtractor})

    def team_success() -> float:
        venv = make_venv()
        venv.seed(100)
        obs, won = venv.reset(), []
        for _ in range(30):
            actions, _ = model.predict(obs, deterministic=True)
            obs, rewards, _, _ = venv.step(actions)
            won.append(rewards.mean())
        return float(np.mean(won))

    assert team_success() < 0.5
    model.learn(2048)
    assert team_success() == 1.0
