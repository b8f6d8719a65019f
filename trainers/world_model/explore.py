"""An exploring AgentFloor agent, to widen world-model training data beyond gold steps.

Each turn it plays a uniformly drawn admissible action of the task variant
(:func:`floor_tasks.candidates.candidate_actions`: gold steps, calls aimed at other records,
other instances' steps, label answers, a give-up answer). The runs are real: the corpus it
writes is an ordinary run corpus, scored by the real tools and verifier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from floor_tasks import load_tasks
from floor_tasks.candidates import candidate_actions
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, run_jobs

__all__ = ["explore_corpus"]


def _variants_by_prompt() -> dict[str, tuple[str, str]]:
    return {task.variant(name).prompt: (task.id, name)
            for task in load_tasks() for name in task.variant_names}


def explore_corpus(out: str | Path, repeats: int = 2, seed: int = 0) -> Path:
    """Run ``repeats`` exploring episodes of every variant of every task into corpus ``out``.

    Deterministic for a seed: episodes advance in a fixed lockstep order and every draw comes
    from one generator.
    """
    rng = np.random.default_rng(seed)
    variants = _variants_by_prompt()

    def explore(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        options = candidate_actions(*variants[prompt])
        return options[int(rng.integers(len(options)))]

    explore.__qualname__ = "explore"
    jobs = [Job(task_id=task_id, variant=variant, repeat=r, seed=seed + r, model="explore")
            for task_id, variant in sorted(set(variants.values())) for r in range(repeats)]
    corpus = RunCorpus(out)
    for record in run_jobs(jobs, explore, batch_size=32):
        corpus.append(record)
    return Path(out)
