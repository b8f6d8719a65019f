"""The ``ppo`` agent: Stable-Baselines3 PPO over byte-level token ids, on the real env or in the
simulation (torch and SB3 load when one is built)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING
from agentworld_envs.sim.env import AgentWorldEnv
from agentworld_envs.wrappers import wrap_for_sb3
from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.arms import (
    BLIND,
    failed_calls,
    record_path,
    sim_backend,
)
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask
from trainers.experiments.sim_to_real.wrappers import InstructionFirst, ToolResultsHidden


class PPOAgent:
    """SB3 PPO with :class:`~agentworld_envs.wrappers.CandidateScoringPolicy` over byte-level
    token ids. The real and the simulated envs go through the same wrappers
    (:func:`~agentworld_envs.wrappers.wrap_for_sb3`), so they present one observation and
    action space and the model moves between them with ``set_env``. One update is one PPO
    rollout of ``ppo_envs * ppo_steps`` steps and its ``ppo_epochs`` epochs."""

    def __init__(self, args: Args, task: FloorTask | McpTask, arm: str, seed: int,
                 world_model: Any) -> None:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.logger import Logger

        from agentworld_envs.wrappers import CandidateOverlapFeatures, CandidateScoringPolicy

        torch.set_num_threads(1)
        self.args, self.task, self.seed, self.blind = args, task, seed, arm == BLIND
        self.last_actions: list[str] = []
        """The last scored episode's actions."""
        self.backend = sim_backend(arm, world_model, task)
        self.max_candidates = task.max_candidates()
        self.envs: dict[str, Any] = {}
        self.simulators: list[Any] = []
        evaluation, self.eval_options = task.eval_env()
        self.evaluation = self._wrap(evaluation)
        first = "real" if arm.startswith("real") else "sim"
        features = ({"features_extractor_class": CandidateOverlapFeatures,
                     "features_extractor_kwargs": {"ngram": args.ppo_overlap_ngram}}
                    if args.ppo_overlap_ngram else {})
        self.model = PPO(CandidateScoringPolicy, self._venv(first), n_steps=args.ppo_steps,
                         batch_size=args.ppo_minibatch, n_epochs=args.ppo_epochs,
                         learning_rate=args.ppo_learning_rate, gamma=args.ppo_gamma,
                         ent_coef=args.ppo_entropy_coef,
                         normalize_advantage=args.ppo_normalize_advantage,
                         policy_kwargs=features, seed=seed, device="cpu")
        self.model.set_logger(Logger(None, []))  # SB3's default: a folder in /tmp per learn()

    def _wrap(self, env: gym.Env) -> gym.Env:
        """The SB3 stack over ``env`` (every tool result hidden in the blind arm)."""
        if self.blind:
            env = ToolResultsHidden(env)
        return wrap_for_sb3(env, max_candidates=self.max_candidates,
                            max_length=self.args.ppo_max_length,
                            candidate_length=self.args.ppo_candidate_length)

    def _make(self, source: str) -> gym.Env:
        """One training env: the real task on the training variants, or its simulation."""
        args, task = self.args, self.task
        if source == "real":
            return self._wrap(task.real_env(args.train_steps))
        # built directly under the real task's own TimeLimit, so both envs count steps alike
        simulated = AgentWorldEnv(
            task.domain, max_steps=args.train_steps, backend=self.backend,
            sampling=EMBEDDED_SAMPLING, scenarios=[task.scenario(v) for v in task.train],
            record_path=record_path(args, self.backend), real_counterpart=False,
            decided_by=args.decided_by, max_faults=args.max_faults)
        self.simulators.append(simulated.sim)
        return self._wrap(InstructionFirst(TimeLimit(simulated, task.budget)))

    def _venv(self, source: str) -> Any:
        if source not in self.envs:
            from stable_baselines3.common.monitor import Monitor
            from stable_baselines3.common.vec_env import DummyVecEnv

            venv = DummyVecEnv([lambda: Monitor(self._make(source))] * self.args.ppo_envs)
            venv.seed(self.seed * 1000 + len(self.envs) * 100)
            self.envs[source] = venv
        return self.envs[source]

    def update(self, real: bool) -> None:
        """One PPO rollout and optimisation, on the real env or in the simulation."""
        venv = self._venv("real" if real else "sim")
        if self.model.get_env() is not venv:
            self.model.set_env(venv)
        self.model.learn(self.args.ppo_envs * self.args.ppo_steps, reset_num_timesteps=False)

    def play(self, variant: str, seed: int) -> float:
        """The greedy policy's reward on one real variant (the task's own budget), reset with
        ``seed``."""
        obs, _ = self.evaluation.reset(seed=seed, options=self.eval_options(variant))
        self.last_actions = []
        while True:
            action, _ = self.model.predict(obs, deterministic=True)
            self.last_actions.append(self.evaluation.get_wrapper_attr("action")(int(action)))
            obs, reward, terminated, truncated, _ = self.evaluation.step(int(action))
            if terminated or truncated:
                return float(reward)

    def close(self) -> int:
        """Close the envs; the failed world-model calls (see :func:`failed_calls`)."""
        for venv in self.envs.values():
            venv.close()
        self.evaluation.close()
        return failed_calls(self.simulators)
