"""Exact team rewards and gains of symbolic chains, checked by brute force and Monte Carlo."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.exact_gains import (
    ExactGainProbe,
    exact_supported,
    exact_team_reward,
    expert_probs,
    imitate,
)
from trainers.common.objectives import surrogate_gain
from trainers.common.team import build_team
from trainers.common.updates import message_log_ratios

CASES = [
    ("team_envs/relay-v0", {"n_agents": 3, "vocab_size": 3, "credit": "final"}),
    ("team_envs/relay-v0", {"n_agents": 2, "vocab_size": 4, "credit": "steps"}),
    ("team_envs/compositional-v0", {"roles": ["add", "sub", "relay"], "vocab_size": 3,
                                    "credit": "steps"}),
]


def warm_team(env_id: str, env_kwargs: dict, accuracy: float = 0.7, seed: int = 3):
    """A team whose agents reply correctly to what they hear about ``accuracy`` of the time."""
    team = build_team(teamtr.Args(env_id=env_id, env_kwargs=env_kwargs, seed=seed,
                                  hidden_size=16, log_dir="", total_episodes=256))
    task = team.rollouts.task
    for agent, policy in enumerate(team.policies):
        target = expert_probs(task, agent, accuracy)
        assert imitate(task, policy, agent, target, steps=150, learning_rate=0.05) < 0.01
    return team


def brute_force_reward(task, policies) -> float:
    """Sum over every private input and every message sequence, scored by the task itself."""
    values = [range(nvec[0]) if (nvec := task.private_nvec(a)) else [None]
              for a in range(task.n_agents)]
    total = 0.0
    for inputs in itertools.product(*values):
        private = [np.array([[x]]) if x is not None else np.zeros((1, 0), dtype=np.int64)
                   for x in inputs]
        weight = np.prod([1 / len(v) for v in values])
        for said in itertools.product(range(task.vocab_size), repeat=task.n_agents):
            messages = np.array(said).reshape(1, task.n_agents, 1)
            probability = weight
            for agent, policy in enumerate(policies):
                with torch.no_grad():
                    log_probs = policy.log_probs(task.context(messages, agent), private[agent])
                probability *= float(log_probs[0, 0, said[agent]].exp())
            total += probability * float(task.score(private, messages)[0])
    return total


@pytest.mark.parametrize(("env_id", "env_kwargs"), CASES)
def test_exact_reward_matches_brute_force_and_monte_carlo(env_id: str, env_kwargs: dict) -> None:
    team = warm_team(env_id, env_kwargs)
    task = team.rollouts.task
    exact = exact_team_reward(task, team.policies)
    assert exact == pytest.approx(brute_force_reward(task, team.policies), abs=1e-6)
    rewards = team.sample(20_000, 2, seed=11).rewards
    assert abs(rewards.mean() - exact) < 4 * rewards.std() / np.sqrt(len(rewards))
    assert 0.05 < exact < 0.95 and abs(exact - 1 / task.vocab_size) > 0.02  # not trivial


def test_stale_gain_is_what_the_stale_surrogate_estimates() -> None:
    team = warm_team("team_envs/relay-v0", {"n_agents": 3, "vocab_size": 3}, accuracy=0.6)
    task = team.rollouts.task
    probe = ExactGainProbe(task, team.policies)
    stale = team.sample(20_000, 4, seed=5)
    changed = warm_team("team_envs/relay-v0", {"n_agents": 3, "vocab_size": 3}, 0.95)
    team.policies[0] = changed.policies[0]  # an earlier agent moves the occupancy
    probe.before(team.policies)
    team.policies[2] = changed.policies[2]
    gains = probe.after(team.policies, 2)
    estimate = surrogate_gain(message_log_ratios(team.policies[2], stale.samples[2]),
                              stale.samples[2].episode, stale)
    assert estimate == pytest.approx(gains["exact_stale_gain"], abs=0.015)
    assert abs(gains["exact_stale_gain"] - gains["exact_true_gain"]) > 0.05


def test_teamtr_logs_exact_gains_and_rejects_tasks_it_cannot_enumerate() -> None:
    args = teamtr.Args(n_agents=3, env_kwargs={"vocab_size": 3}, prompts_per_rollout=16,
                       total_episodes=2 * 3 * 64, log_dir="", eval_episodes=64,
                       exact_gains=True, delta=0.5, delta_schedule="constant",
                       learning_rate=0.03)
    record = teamtr.train(args).history[1]
    first = min(range(3), key=lambda a: record[f"trust_region/agent_{a}/position"])
    assert record[f"surrogate/agent_{first}/exact_stale_gain"] == pytest.approx(
        record[f"surrogate/agent_{first}/exact_true_gain"], abs=1e-12)
    assert record["surrogate/exact_stale_bias"] == pytest.approx(sum(
        abs(record[f"surrogate/agent_{a}/exact_stale_gain"]
            - record[f"surrogate/agent_{a}/exact_true_gain"]) for a in range(3)))
    assert not exact_supported(build_team(teamtr.Args(
        env_kwargs={"window": 2}, log_dir="")).rollouts.task)
    with pytest.raises(ConfigError, match="^exact_gains: "):
        teamtr.train(teamtr.Args(env_id="team_envs/referential-v0", exact_gains=True,
                                 log_dir="", total_episodes=256))
