"""reasoning-gym's procedural tasks as text teams (``team_envs/reasoning-v0``).

``task=`` names any dataset of the ``reasoning-gym`` package (``basic_arithmetic``,
``chain_sum``, ``gsm_symbolic``, ...; ``config=`` holds its settings). The team discusses the
question in the shared context; the last agent's answer, read after its last ``ANSWER:``, is
scored by the dataset's own ``score_answer``, so rewards are in [0, 1] as reasoning-gym
defines them.

Held-out items are really unseen: the first ``held_out`` items of the dataset are the
evaluation set (``reset(options={"split": "test", "index": i})``), and a training episode
draws any other item whose question is not one of theirs.

Example:
    >>> from team_envs.text import reasoning
    >>> env = reasoning.env(task="basic_arithmetic", n_agents=2)
    >>> env.reset(seed=0, options={"split": "test", "index": 0})
    >>> env.unwrapped.episode.problem.statement.startswith("Calculate")
    True
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, check_int, wrap
from team_envs.text.base import Problem, ReasoningEpisode, ReasoningTask

__all__ = ["ReasoningGymTask", "env", "raw_env", "parallel_env"]

_DRAWS = 100
"""Training draws tried before a task is declared too small to hold out ``held_out`` items."""


def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError as error:
        raise ImportError("team_envs/reasoning-v0 needs reasoning-gym: "
                          "pip install 'agentworld[reasoning]'") from error
    return reasoning_gym


class ReasoningGymTask(ReasoningTask):
    """A reasoning-gym dataset, with a held-out evaluation set.

    Args:
        task: A reasoning-gym dataset name.
        config: The dataset's settings (reasoning-gym's config fields, ``seed`` and ``size``
            excepted).
        held_out: Items kept for evaluation, never drawn in training.
        size: The dataset's size, held-out items included (some datasets build per-item
            tables of this size at construction; reasoning-gym's word_ladder allows 20,000).
        dataset_seed: The dataset's seed: which items exist and which are held out.
        **kwargs: See :class:`~team_envs.text.base.TextTeamTask`.
    """

    family = "reasoning"

    def __init__(self, task: str = "basic_arithmetic", config: Mapping[str, Any] | None = None,
                 held_out: int = 64, size: int = 10_000, dataset_seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        gym = _reasoning_gym()
        names = sorted(gym.factory.DATASETS)
        if task not in names:
            near = difflib.get_close_matches(str(task), names, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ValueError(f"task must be a reasoning-gym dataset, not {task!r}{hint} "
                             f"({len(names)} datasets: reasoning_gym.factory.DATASETS)")
        config = dict(config or {})
        if {"seed", "size"} & set(config):
            raise ValueError("config must not set seed or size: use dataset_seed and size "
                             "(the items) and held_out (the evaluation set)")
        held_out = check_int("held_out", held_out, 1)
        size = check_int("size", size, held_out + 1)
        dataset_seed = check_int("dataset_seed", dataset_seed, 0)
        try:
            self.dataset = gym.create_dataset(task, seed=dataset_seed, size=size, **config)
        except (TypeError, ValueError, AssertionError) as error:
            raise ValueError(f"reasoning-gym refused {task} with config {config}: "
                             f"{error}") from error
        self.task = task
        self.held_out = held_out
        self._held_out_questions = {self.dataset[i]["question"] for i in range(held_out)}

    def generate(self, rng: np.random.Generator) -> Problem:
        """A training item: any index past the held-out ones whose question is not held out."""
        for _ in range(_DRAWS):
            index = int(rng.integers(self.held_out, len(self.dataset)))
            entry = self.dataset[index]
            if entry["question"] not in self._held_out_questions:
                return self._problem(entry, index, "train")
        raise ValueError(f"{self.task}: {_DRAWS} draws all repeated a held-out question; the "
                         f"task has too few distinct items for held_out={self.held_out}")

    def held_out_problem(self, index: int) -> Problem:
        """Held-out item ``index`` (0 to ``held_out - 1``)."""
        if not isinstance(index, int) or not 0 <= index < self.held_out:
            raise ValueError(f"index must be an integer from 0 to {self.held_out - 1}, "
                             f"got {index!r}")
        return self._problem(self.dataset[index], index, "test")

    def _problem(self, entry: dict[str, Any], index: int, split: str) -> Problem:
        return Problem(entry["question"], ("",) * self.n_agents, entry["answer"],
                       {"entry": entry, "index": index, "split": split})

    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> ReasoningEpisode:
        """A training item, or with ``options={"split": "test", "index": i}`` held-out item
        ``i``."""
        options = options or {}
        split = options.get("split", "train")
        if split == "test":
            return ReasoningEpisode(self, self.held_out_problem(options.get("index", 0)))
        if split != "train":
            raise ValueError(f"options['split'] must be 'train' or 'test', got {split!r}")
        return ReasoningEpisode(self, self.generate(rng))

    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """The dataset's own ``score_answer``."""
        score = float(self.dataset.score_answer(answer, problem.details["entry"]))
        return score, {"expected": problem.answer, "given": answer}


class raw_env(SharedContextEnv):
    """reasoning-gym tasks as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "reasoning_v0"}
    task_type = ReasoningGymTask


def env(**kwargs: Any) -> AECEnv:
    """reasoning-gym tasks as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """reasoning-gym tasks in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
