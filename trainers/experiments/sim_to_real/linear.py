"""The ``linear`` agent: a softmax policy over hashed (observation, candidate) features, trained
with REINFORCE on real episodes or on batches from a vector of simulated envs."""

from __future__ import annotations

import functools
import zlib
from typing import Any

import gymnasium as gym
import numpy as np

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.registration import env_id
from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.arms import (
    ARMS,
    BLIND,
    failed_calls,
    record_path,
    sim_backend,
)
from trainers.experiments.sim_to_real.features import is_id, result_values, words
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask


class LinearPolicy:
    """Softmax over candidates of a linear score of hashed (observation, candidate) features."""

    def __init__(self, rng: np.random.Generator, learning_rate: float, entropy_coef: float,
                 size: int = 2**16):
        self.rng, self.learning_rate, self.size = rng, learning_rate, size
        self.entropy_coef = entropy_coef
        self.weights = np.zeros(size)

    def features(self, prompt: str, observation: str, turn: int, candidate: str,
                 template: frozenset[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The hashed feature indices of one candidate and their counts. ``template``: for a
        final answer, the words every candidate answer opens with (``the answer is``), so the
        rest is its value (a count, a time, a person's name); None otherwise."""
        seen, asked = set(words(observation)), set(words(prompt))
        values = {w for v in result_values(observation) for w in words(v) if not is_id(w)}
        keys = []
        for word in words(candidate):
            if is_id(word):
                keys.append(f"id:{'prompt' if word in asked else 'other'}:"
                            f"{'observed' if word in seen else 'unseen'}")
                continue
            keys += [f"w:{word}", f"t{turn}:{word}"]
            keys += [f"x:{value}:{word}" for value in values]
            if any(ch.isdigit() for ch in word):  # a value such as an answer's number
                keys.append(f"value:{'observed' if word in seen else 'unseen'}")
            elif template is not None and word in seen and word not in template | asked:
                keys.append("value:observed")  # a value without digits, such as a name
        hashed = np.array([zlib.crc32(k.encode()) % self.size for k in keys], dtype=np.int64)
        index, counts = np.unique(hashed, return_counts=True)
        return index, counts.astype(float)

    def probabilities(self, prompt: str, observation: str, turn: int,
                      candidates: list[str]) -> tuple[np.ndarray, list[Any]]:
        feats = [self.features(prompt, observation, turn, c, t)
                 for c, t in zip(candidates, answer_templates(candidates), strict=True)]
        logits = np.array([float(self.weights[i] @ v) for i, v in feats])
        weights = np.exp(logits - logits.max())
        return weights / weights.sum(), feats

    def act(self, prompt: str, observation: str, turn: int, candidates: list[str],
            greedy: bool = False) -> tuple[int, tuple]:
        probs, feats = self.probabilities(prompt, observation, turn, candidates)
        choice = int(np.argmax(probs)) if greedy else int(self.rng.choice(len(probs), p=probs))
        return choice, (probs, feats, choice)

    def update(self, episodes: list[tuple[list[tuple], float]]) -> None:
        """REINFORCE with the batch's mean reward as the baseline, plus an entropy bonus that
        keeps the policy from settling on one decision before it has learnt to read."""
        baseline = float(np.mean([reward for _, reward in episodes]))
        for steps, reward in episodes:
            advantage = reward - baseline
            for probs, feats, choice in steps:
                logp = np.log(np.clip(probs, 1e-12, None))
                entropy = -float(probs @ logp)
                for k, (index, values) in enumerate(feats):
                    gradient = advantage * (float(k == choice) - probs[k]) \
                        - self.entropy_coef * probs[k] * (logp[k] + entropy)
                    self.weights[index] += self.learning_rate * gradient * values


def answer_templates(candidates: list[str]) -> list[frozenset[str] | None]:
    """For each final-answer candidate, the words that open every final answer (``the answer
    is``), so the rest is its value; None for each tool call, and for every candidate where
    the answers share no opening (such as "The task is complete." beside "I could not
    determine the answer.": no values to read). Kept per candidate list, which an episode
    offers at every step."""
    return list(_answer_templates(tuple(candidates)))


@functools.lru_cache(maxsize=4096)
def _answer_templates(candidates: tuple[str, ...]) -> tuple[frozenset[str] | None, ...]:
    answers = [words(c) if parse_action(c).is_final_answer else None for c in candidates]
    texts = [a for a in answers if a is not None]
    opening = 0
    while len(texts) > 1 and all(len(t) > opening and t[opening] == texts[0][opening]
                                 for t in texts):
        opening += 1
    if not opening:
        return (None,) * len(candidates)
    template = frozenset(texts[0][:opening])
    return tuple(None if a is None else template for a in answers)


class BlindPolicy(LinearPolicy):
    """The linear policy shown the task's prompt in place of every observation: it never reads
    a tool result (the ``real-blind`` control)."""

    def act(self, prompt: str, observation: str, turn: int, candidates: list[str],
            greedy: bool = False) -> tuple[int, tuple]:
        return super().act(prompt, prompt, turn, candidates, greedy)


def real_batch(args: Args, task: FloorTask | McpTask, policy: LinearPolicy,
               rng: np.random.Generator) -> list[tuple[list[tuple], float]]:
    """Episodes on the real env, one training variant drawn from ``rng`` each."""
    episodes = []
    for _ in range(args.batch):
        variant = task.train[int(rng.integers(len(task.train)))]
        reward, trajectory, _ = play_real(task, variant, policy, args.train_steps,
                                       seed=int(rng.integers(2**31)), greedy=False)
        episodes.append((trajectory, reward))
    return episodes


def play_real(task: FloorTask | McpTask, variant: str, policy: LinearPolicy,
              steps: int | None, seed: int, greedy: bool
              ) -> tuple[float, list[tuple], list[str]]:
    """One episode on the real env: its reward, the policy's steps and the actions taken."""
    env, prompt = task.play(variant, steps, seed)
    observation, trajectory, actions, reward = prompt, [], [], 0.0
    for turn in range(env.max_steps):
        candidates = env.candidate_actions()
        choice, step = policy.act(prompt, observation, turn, candidates, greedy)
        trajectory.append(step)
        actions.append(candidates[choice])
        observation, reward, terminated, truncated, _ = env.step(candidates[choice])
        if terminated or truncated:
            break
    return reward, trajectory, actions


class SimTrainer:
    """Batches of simulated episodes from a vector of the task's simulated envs
    (``AgentWorld/Floor-v0`` or ``AgentWorld/MCP-v0``) with no real counterpart: nothing
    real is built or played, and the reward is the simulated episode's alone."""

    def __init__(self, args: Args, task: FloorTask | McpTask, backend: Any, seed: int) -> None:
        self.args = args
        self.envs = gym.make_vec(
            env_id(task.domain), num_envs=args.batch, backend=backend,
            max_steps=args.train_steps, sampling=EMBEDDED_SAMPLING, real_counterpart=False,
            decided_by=args.decided_by, scenarios=[task.scenario(v) for v in task.train],
            record_path=record_path(args, backend), max_faults=args.max_faults)
        self.seed = seed

    def batch(self, policy: LinearPolicy) -> list[tuple[list[tuple], float]]:
        """One episode per env (steps after an env's first episode ends are not used)."""
        _, infos = self.envs.reset(seed=self.seed)
        self.seed += 1
        prompts = list(infos["instruction"])  # the task as FloorEnv states it (no tool list)
        observations = list(prompts)
        candidates = [list(c) for c in infos["candidate_actions"]]
        trajectories: list[list[tuple]] = [[] for _ in prompts]
        rewards: list[float | None] = [None] * len(prompts)
        for turn in range(self.args.train_steps):
            actions = []
            for i, prompt in enumerate(prompts):
                choice, step = policy.act(prompt, observations[i], turn, candidates[i])
                if rewards[i] is None:
                    trajectories[i].append(step)
                actions.append(candidates[i][choice])
            observations, reward, terminated, truncated, infos = self.envs.step(actions)
            for i in np.flatnonzero(terminated | truncated):
                if rewards[i] is None:  # same-step autoreset: the ended episode's reward
                    rewards[i] = float(reward[i])
            if all(r is not None for r in rewards):
                break
        return [(t, r) for t, r in zip(trajectories, rewards, strict=True) if r is not None]

    def close(self) -> int:
        self.envs.close()
        return failed_calls([self.envs.unwrapped.sim])


PAIRED = 1_000_003
"""Seeds, with the seed, the real episodes' draws of every arm under
``--paired-real-updates`` (no arm's index: those seed each arm's draws without it)."""


class LinearAgent:
    """The linear REINFORCE policy of one arm and seed, with its real and simulated batches."""

    def __init__(self, args: Args, task: FloorTask | McpTask, arm: str, seed: int,
                 world_model: Any) -> None:
        self.args, self.task = args, task
        # the real episodes' draws: by seed and arm, or shared by the arms of one seed, so
        # the capped arms' real updates are the same (paired: C1's committed seventh run)
        self.rng = np.random.default_rng([seed, PAIRED if args.paired_real_updates
                                          else ARMS.index(arm)])
        kind = BlindPolicy if arm == BLIND else LinearPolicy
        self.policy = kind(np.random.default_rng(seed), args.learning_rate, args.entropy_coef)
        backend = sim_backend(arm, world_model, task)
        self.sim = (SimTrainer(args, task, backend, seed * 1000) if backend is not None
                    else None)
        self.last_actions: list[str] = []
        """The last scored episode's actions."""

    def update(self, real: bool) -> None:
        """One policy update on a batch of real or simulated episodes."""
        self.policy.update(real_batch(self.args, self.task, self.policy, self.rng) if real
                           else self.sim.batch(self.policy))

    def play(self, variant: str, seed: int) -> float:
        """The greedy policy's reward on one real variant (the task's own budget), reset with
        ``seed``."""
        reward, _, actions = play_real(self.task, variant, self.policy, None, seed=seed,
                                       greedy=True)
        self.last_actions = actions
        return reward

    def close(self) -> int:
        """Close the envs; the failed world-model calls (see :func:`failed_calls`)."""
        return self.sim.close() if self.sim is not None else 0
