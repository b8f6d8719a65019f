"""A finite list of admissible actions per task variant, for discrete-action learners.

The list holds every step of the variant's reference solution plus distractors: the same calls
aimed at other records, the steps of the task's other instances, the other labels of a closed
label set, and a give-up answer. ``wide=True`` adds more kinds, so that every variant has
distractors besides the give-up answer: each step with its first or last number changed (a
wrong record, a wrong value), each call with another value of an enumerated argument (a wrong
branch), the final submission with each argument set to a value it takes in another instance
(so a branching task offers every branch for its own record, and only what the tools return
tells them apart), and, for a task that ends with a submission, a premature claim that the work
is done.
Its order is a fixed shuffle (seeded by the task and variant), so a gold step's index carries
no signal; the envs shuffle it again at every reset
(:func:`agentworld_envs.protocol.seeding.shuffled`).
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from typing import Any

import numpy as np

from agentworld_envs.protocol.seeding import shuffled
from agentworld_envs.protocol.tool_calls import parse_action
from floor_tasks.database import load_fixture
from floor_tasks.solutions import solution
from floor_tasks.task import load_task
from floor_tasks.task_sets import final_submission
from floor_tasks.tools import FloorToolkit

__all__ = ["COMPLETION_CLAIM", "GIVE_UP", "candidate_actions"]

GIVE_UP = "I could not determine the answer."
COMPLETION_CLAIM = "The task is complete."
"""A final answer that claims the work is done, offered before anything was submitted."""
_NUMBER = re.compile(r"\d+")


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _retargeted(action: str, record_ids: list[str]) -> list[str]:
    """Copies of each call with one record-id argument swapped for another record's id."""
    out = []
    for call in parse_action(action).calls:
        for key, value in call.arguments.items():
            if value in record_ids:
                other = record_ids[(record_ids.index(value) + 1) % len(record_ids)]
                if other != value:
                    out.append(_call_text(call.name, {**call.arguments, key: other}))
    return out


def _shifted(action: str) -> list[str]:
    """Copies of the action with its first, or its last, number one higher."""
    found = list(_NUMBER.finditer(action))
    ends = {m.start(): m for m in found[:1] + found[-1:]}.values()
    return [f"{action[:m.start()]}{int(m.group()) + 1}{action[m.end():]}" for m in ends]


@functools.cache
def _enums(tools: tuple[str, ...]) -> dict[str, dict[str, list[Any]]]:
    """Each tool's enumerated arguments and their values."""
    return {schema["function"]["name"]: {
        key: prop["enum"] for key, prop in schema["function"]["parameters"]
        .get("properties", {}).items() if "enum" in prop}
        for schema in FloorToolkit.schemas(tools)}


def _branched(action: str, enums: dict[str, dict[str, list[Any]]]) -> list[str]:
    """Copies of each call with an enumerated argument set to another of its values."""
    return [_call_text(call.name, {**call.arguments, key: other})
            for call in parse_action(action).calls
            for key, values in enums.get(call.name, {}).items() if key in call.arguments
            for other in values if other != call.arguments[key]]


def _other_decisions(task_id: str, variant: str) -> list[str]:
    """Copies of the variant's final submission with one argument set to a value that the
    task's other variants submit for it."""
    gold = final_submission(task_id, variant)
    if gold is None:
        return []
    others = [s for v in load_task(task_id).variant_names
              if (s := final_submission(task_id, v)) is not None]
    return [_call_text("submit_decision", {**gold, key: other[key]})
            for other in others for key in gold if key in other and other[key] != gold[key]]


def candidate_actions(task_id: str, variant: str, *, wide: bool = False) -> list[str]:
    """The admissible actions of a task variant: its gold steps among distractors.

    Args:
        task_id: The task, e.g. ``"C3"``.
        variant: The variant's name, e.g. ``"v0"`` or ``"i1"``.
        wide: Add the wrong-value, wrong-branch and premature-answer distractors (see the
            module docstring). The ``AgentFloor`` and ``AgentWorld/Floor-v0`` envs use them.
    """
    return list(_candidates(task_id, variant, wide))


@functools.cache
def _candidates(task_id: str, variant: str, wide: bool) -> tuple[str, ...]:
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
    if wide:
        enums = _enums(tuple(task.tools))
        for action in gold:
            pool.update(_shifted(action), _branched(action, enums))
        pool.update(_other_decisions(task_id, variant))
        if task.tools and all(step.answer is None for step in task.solution):
            pool.add(COMPLETION_CLAIM)
    ordered = sorted(pool)
    rng = np.random.default_rng(zlib.crc32(f"{task_id}/{variant}".encode()))
    return tuple(shuffled(ordered, rng))
