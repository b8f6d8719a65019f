"""The shipped AgentWorldBench-format sample (``data/sample_bench.jsonl``) and how it is made.

The real bench cannot be downloaded here, so this sample stands in for tests and the README.
Its items come from real AgentFloor transitions (oracle runs, ground truth = the real tools),
from simulated ``AgentWorld/Floor-v0`` rollouts in hybrid mode (real ground truth), and from
simulated ``AgentWorld/Search-v0`` rollouts with the ``scripted`` backend, whose ground
truth is that backend's own output (marked ``ground_truth: world_model``): a format sample for a
second domain, not a measure of anything.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

from agentworld_envs.bench.items import BenchItem, load_items

__all__ = ["SAMPLE_TASKS", "build_sample", "load_sample", "sample_path"]

SAMPLE_TASKS = ("A1", "B2", "C3", "D1", "E4")
_FLOOR_TOOLS = ["search_records", "lookup_record", "get_attribute", "list_options",
                "check_constraint", "compare_records", "compute_value", "submit_decision"]


def sample_path() -> Path:
    """The shipped sample file."""
    return Path(str(resources.files("agentworld_envs.bench") / "data" / "sample_bench.jsonl"))


def build_sample(seed: int = 0) -> list[BenchItem]:
    """Rebuild the sample (deterministic for a seed)."""
    import gymnasium as gym

    import agentworld_envs  # noqa: F401 - registers the AgentWorld envs
    from agentworld_envs.bench.transitions import corpus_transitions, simulated_transitions
    from floor_tasks.harness.corpus import RunCorpus
    from floor_tasks.harness.runner import Job, run_jobs

    with tempfile.TemporaryDirectory() as tmp:
        corpus = RunCorpus(Path(tmp) / "oracle")
        for record in run_jobs([Job(task_id=t, model="oracle") for t in SAMPLE_TASKS],
                               "oracle"):
            corpus.append(record)
        items = corpus_transitions([corpus.dir])
    floor = gym.make("AgentWorld/Floor-v0", backend="scripted", mode="hybrid",
                     real_tools=_FLOOR_TOOLS,
                     scenarios=[f"{t}/v1" for t in SAMPLE_TASKS])
    items += simulated_transitions(floor, 3, seed=seed, start_id=len(items))
    floor.close()
    search = gym.make("AgentWorld/Search-v0", backend="scripted")
    items += simulated_transitions(search, 8, seed=seed, start_id=0)
    search.close()
    return items


def load_sample() -> list[BenchItem]:
    """The shipped sample's items."""
    return load_items(sample_path())
