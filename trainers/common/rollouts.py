"""Roll out a team: batched symbolic episodes, or text episodes through the PettingZoo API.

Both engines draw ``prompts`` problems and play each ``group_size`` times, so that advantages can
be normalised within a group, and return a :class:`~trainers.common.batch.RolloutBatch`.

* :class:`SymbolicRollouts` plays whole batches with the symbolic task's own vectorised rules
  (:class:`team_envs.symbolic.SymbolicBatch`), the same rules the PettingZoo env plays.
* :class:`TextRollouts` steps one ``pettingzoo.make("aec", ...)`` env per episode in lockstep
  and batches the generation of all episodes waiting for the same agent. The envs share one
  task (built once: for ``team_envs/reasoning-v0`` the dataset and its held-out items), each
  keeping only its own episode.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pettingzoo
import torch

from team_envs.symbolic.tasks import SymbolicTask
from trainers.common.batch import RolloutBatch, Samples
from trainers.policies.lm import CausalLMPolicy, TextMessages
from trainers.policies.symbolic import SymbolicAgent, SymbolicMessages

__all__ = ["SymbolicRollouts", "TextRollouts"]


class SymbolicRollouts:
    """Batched rollouts of a symbolic team (the fast path).

    Args:
        task: The symbolic task.
    """

    def __init__(self, task: SymbolicTask) -> None:
        self.task = task

    def held_out_items(self) -> int:
        """0: symbolic episodes are drawn afresh from the generator; no item set is held out."""
        return 0

    @torch.no_grad()
    def collect(self, policies: Sequence[SymbolicAgent], prompts: int, group_size: int,
                rng: np.random.Generator, generator: torch.Generator,
                scored: bool = True, defer_scoring: bool = False) -> RolloutBatch:
        """Play ``prompts * group_size`` episodes (their log-probs come with the sampling
        itself, so ``scored`` and ``defer_scoring`` change nothing here)."""
        private = [np.repeat(p, group_size, axis=0)
                   for p in self.task.sample_private(rng, prompts)]
        batch = self.task.batch(private)
        episodes = np.arange(batch.size)
        samples: list[Samples | None] = [None] * self.task.n_agents
        while (agent := batch.speaker) is not None:
            context, own = batch.observe(agent)
            actions, logp, dists = policies[agent].sample(context, own, generator)
            batch.act(actions)
            samples[agent] = Samples(agent, episodes, SymbolicMessages(context, own, actions),
                                     torch.ones_like(logp), logp, dists)
        return RolloutBatch(batch.score(), np.repeat(np.arange(prompts), group_size), samples)


class TextRollouts:
    """Text-team rollouts through the registered PettingZoo AEC env.

    Args:
        env_id: The registered env id.
        env_kwargs: Its keyword arguments.
        env: An env already made from them, to reuse (its task is the one every episode plays).
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], env: Any = None) -> None:
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self._envs: list[Any] = [] if env is None else [env]

    def _envs_for(self, episodes: int) -> list[Any]:
        """``episodes`` envs (kept for the next batch), all playing the first one's task."""
        if not self._envs:
            self._envs.append(pettingzoo.make("aec", self.env_id, **self.env_kwargs))
        first = self._envs[0]
        while len(self._envs) < episodes:
            self._envs.append(pettingzoo.make("aec", self.env_id, team_task=first.unwrapped.task,
                                              render_mode=first.unwrapped.render_mode))
        return self._envs[:episodes]

    def held_out_items(self) -> int:
        """How many held-out evaluation items the env's task keeps (``held_out``, as
        ``team_envs/reasoning-v0``'s; 0 where it keeps none)."""
        return int(getattr(self._envs_for(1)[0].unwrapped.task, "held_out", 0))

    def collect(self, policies: Sequence[CausalLMPolicy], prompts: int, group_size: int,
                rng: np.random.Generator, generator: torch.Generator, *,
                options: Sequence[dict[str, Any]] | None = None,
                greedy: bool = False, scored: bool = True,
                defer_scoring: bool = False) -> RolloutBatch:
        """Play ``prompts * group_size`` episodes; a group's episodes share the env seed (and
        its entry of ``options``, the reset options that pick held-out items). ``greedy``
        decodes every message greedily; without ``scored`` (an evaluation, which needs the
        rewards alone) the messages' old log-probs are not scored and ``samples`` is empty.
        With ``defer_scoring``, old log-probs that the sampling pass did not record (bf16,
        vLLM) are left to be scored when needed (``Samples.old_logp`` None)."""
        envs = self._envs_for(prompts * group_size)
        seeds = rng.integers(2**31 - 1, size=prompts)
        for k, env in enumerate(envs):
            env.reset(seed=int(seeds[k // group_size]),
                      options=None if options is None else options[k // group_size])
        index = {name: i for i, name in enumerate(envs[0].possible_agents)}
        rewards = np.zeros(len(envs))
        written: list[list[tuple[int, TextMessages]]] = [[] for _ in index]
        while True:
            waiting: dict[int, list[tuple[int, dict[str, Any]]]] = {}
            for k, env in enumerate(envs):
                while env.agents:
                    observation, reward, terminated, truncated, _ = env.last()
                    if terminated or truncated:
                        rewards[k] = reward
                        env.step(None)
                        continue
                    waiting.setdefault(index[env.agent_selection], []).append((k, observation))
                    break
            if not waiting:
                break
            for agent, items in waiting.items():
                messages = policies[agent].generate([obs for _, obs in items], generator,
                                                    greedy=greedy)
                for row, (k, _) in enumerate(items):
                    envs[k].step(messages.texts[row])
                written[agent].append(([k for k, _ in items], messages))
        start = time.perf_counter()
        samples = [self._samples(agent, policies[agent], chunks, defer_scoring)
                   for agent, chunks in enumerate(written)] if scored else []
        return RolloutBatch(rewards, np.repeat(np.arange(prompts), group_size), samples,
                            scoring_s=time.perf_counter() - start,
                            new_tokens=sum(len(r) for chunks in written for _, m in chunks
                                           for r in m.response_ids),
                            transcript=envs[0].unwrapped.episode.render())

    @staticmethod
    @torch.no_grad()
    def _samples(agent: int, policy: CausalLMPolicy,
                 chunks: list[tuple[list[int], TextMessages]], defer: bool) -> Samples:
        episodes = [k for ks, _ in chunks for k in ks]
        recorded = all(m.logprobs is not None for _, m in chunks)
        messages = TextMessages(
            [p for _, m in chunks for p in m.prompt_ids],
            [r for _, m in chunks for r in m.response_ids],
            [t for _, m in chunks for t in m.texts], policy.source,
            [lp for _, m in chunks for lp in m.logprobs] if recorded else None)
        mask = policy.response_mask(messages)
        samples = Samples(agent, np.asarray(episodes, dtype=np.int64), messages, mask,
                          torch.zeros_like(mask))
        if messages.logprobs is not None and len(messages):  # from the sampling pass itself
            for row, logprobs in enumerate(messages.logprobs):
                samples.old_logp[row, :len(logprobs)] = torch.tensor(logprobs)
        elif len(messages):
            samples.old_logp = None if defer else policy.token_logprobs(samples)
        return samples
