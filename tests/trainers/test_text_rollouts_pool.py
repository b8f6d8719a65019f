"""The text rollouts' pool of envs: one task for every episode slot, independent episodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pettingzoo
import pytest
import torch

import team_envs  # noqa: F401
from team_envs.text.reasoning import ReasoningGymTask
from tests.team_envs.test_text import _oracle_floor_team
from trainers.common.rollouts import TextRollouts

REASONING = {"task": "chain_sum", "held_out": 2, "size": 40}


def test_every_slot_plays_one_task_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each slot built its own task: for reasoning-v0 the dataset and its held-out items, per
    episode slot, up to the largest batch asked for (1,024 evaluation episodes by default)."""
    built = []
    init = ReasoningGymTask.__init__

    def counted(self, *args, **kwargs) -> None:
        built.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(ReasoningGymTask, "__init__", counted)
    rollouts = TextRollouts("team_envs/reasoning-v0", REASONING)
    assert rollouts.held_out_items() == 2
    envs = rollouts._envs_for(16)
    assert len(envs) == 16 and len({id(env) for env in envs}) == 16
    assert len({id(env.unwrapped.task) for env in envs}) == 1
    assert len(built) == 1


def test_a_given_env_is_the_first_slot_and_its_task_the_one_played() -> None:
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0", n_agents=2)
    envs = TextRollouts("team_envs/arithmetic_chain-v0", {"n_agents": 2}, env)._envs_for(4)
    assert envs[0] is env and {id(e.unwrapped.task) for e in envs} == {id(env.unwrapped.task)}


def test_envs_sharing_a_floor_task_play_independent_episodes() -> None:
    """A floor team's episodes play in real floor envs: interleaved, two episodes on one task
    must not step each other's floor env."""
    first = pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["B3", "C3"])
    second = pettingzoo.make("aec", "team_envs/floor_team-v0", team_task=first.unwrapped.task)
    rewards = {}
    for seed, env in enumerate((first, second)):
        env.reset(seed=seed, options={"task_id": "C3"})
    while first.agents or second.agents:
        for key, env in (("first", first), ("second", second)):
            if env.agents:
                name = env.agent_selection
                _, rewards[key], terminated, truncated, _ = env.last()
                env.step(None if terminated or truncated else _oracle_floor_team(
                    int(name.split("_")[1]), None, env))
    assert rewards == {"first": 1.0, "second": 1.0}


def test_team_task_is_checked() -> None:
    task = pettingzoo.make("aec", "team_envs/countdown-v0").unwrapped.task
    with pytest.raises(TypeError, match="instance of ArithmeticChainTask, got CountdownTask"):
        pettingzoo.make("aec", "team_envs/arithmetic_chain-v0", team_task=task)
    with pytest.raises(TypeError, match=r"not both \(got team_task and \['n_agents'\]\)"):
        pettingzoo.make("aec", "team_envs/countdown-v0", team_task=task, n_agents=2)


class _SlotOwnTask(TextRollouts):
    """The former pool: a task built per episode slot."""

    def _envs_for(self, episodes: int) -> list:
        while len(self._envs) < episodes:
            self._envs.append(pettingzoo.make("aec", self.env_id, **self.env_kwargs))
        return self._envs[:episodes]


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("team_envs/reasoning-v0", {**REASONING, "n_agents": 2}),
    ("team_envs/countdown-v0", {"n_agents": 2, "handoff": "router"}),
])
def test_a_shared_task_rolls_out_as_one_task_per_slot(tiny_lm_dir: Path, env_id: str,
                                                      kwargs: dict) -> None:
    """Sharing the task changes no episode: two seeded batches (the second on reused envs) and
    a held-out greedy one are those of a pool with a task per slot."""
    from trainers.policies.lm import CausalLMPolicy

    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=6)

    def batches(rollouts: TextRollouts) -> list:
        rng, generator = np.random.default_rng(3), torch.Generator().manual_seed(3)
        runs = [rollouts.collect([policy, policy], 2, 2, rng, generator) for _ in range(2)]
        if env_id == "team_envs/reasoning-v0":
            runs.append(rollouts.collect([policy, policy], 2, 1, rng, generator, greedy=True,
                                         options=[{"split": "test", "index": i}
                                                  for i in range(2)]))
        return [(b.rewards.tolist(), b.transcript, [s.payload.texts for s in b.samples])
                for b in runs]

    assert batches(TextRollouts(env_id, kwargs)) == batches(_SlotOwnTask(env_id, kwargs))
