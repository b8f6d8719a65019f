"""A finite list of admissible actions per task variant, for discrete-action learners.

The list holds every step of the variant's reference solution plus distractors: the same calls
aimed at other records, the steps of the task's other instances, the other labels of a closed
label set, and a give-up answer. Its order
is a fixed shuffle (seeded by the task and variant), so a gold step's index carries no signal.
"""

from __future__ import annotations

import json
import zlib

import numpy as np

from agentworld_envs.protocol.tool_calls import parse_action
from floor_tasks.database import load_fixture
from floor_tasks.solutions import solution
from floor_tasks.task import load_task

__all__ = ["candidate_actions"]

GIVE_UP = "I could not determine the answer."


def _retargeted(action: str, record_ids: list[str]) -> list[str]:
    """Copies of each call with one record-id argument swapped for another record's id."""
    out = []
    for call in parse_action(action).calls:
        for key, value in call.arguments.items():
            if value in record_ids:
                other = record_ids[(record_ids.index(value) + 1) % len(record_ids)]
                if other != value:
                    out.append(json.dumps({"name": call.name,
                                           "arguments": {**call.arguments, key: other}}))
    return out


def candidate_actions(task_id: str, variant: str) -> list[str]:
    """The admissible actions of a task variant: its gold steps among distractors."""
    task = load_task(task_id)
    gold = solution(task_id, variant)
    record_ids = sorted(load_fixture(task.fixture).records)
    pool = set(gold) | {GIVE_UP}
    for action in gold:
        pool.update(_retargeted(action, record_ids))
    for check in task.forbidden:
        pool.update(check.params.get("valid_set", []))  # every label of a closed label set
    for other in task.variant_names:
        if other.startswith("i"):
            pool.update(solution(task_id, other))
    ordered = sorted(pool)
    rng = np.random.default_rng(zlib.crc32(f"{task_id}/{variant}".encode()))
    return [ordered[i] for i in rng.permutation(len(ordered))]
