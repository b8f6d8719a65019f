"""Task sets for learning agents: tasks whose right action depends on what the tools return.

In most AgentFloor tasks the prompt names what to submit, so a policy can pass without reading a
single observation. A **branching** task is different: its final submission has a decision (an
argument that is not a record id, such as C1's ``action``) that differs between two variants
whose prompts are the same but for a record id. The candidate actions offer every decision for
the variant's own record (:mod:`floor_tasks.candidates`), so only the value a tool returns
(C1's status, C3's score, C5's severity) tells the two apart: a policy that ignores
observations passes at most one of them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from agentworld_envs.protocol.tool_calls import parse_action
from floor_tasks.database import load_fixture
from floor_tasks.solutions import solution
from floor_tasks.task import load_task, load_tasks

__all__ = ["blind_pairs", "branching_tasks", "decisions", "final_submission", "masked_prompt"]


def final_submission(task_id: str, variant: str) -> dict[str, Any] | None:
    """The arguments of the last ``submit_decision`` of the variant's reference solution."""
    calls = [c for action in solution(task_id, variant) for c in parse_action(action).calls
             if c.name == "submit_decision"]
    return calls[-1].arguments if calls else None


def decisions(task_id: str) -> dict[str, str]:
    """Each variant's decision (the submitted value of the task's decision argument), or {}
    when the task has no decision that varies."""
    task = load_task(task_id)
    ids = set(load_fixture(task.fixture).records)
    submitted = {v: s for v in task.variant_names if (s := final_submission(task_id, v))}
    if not submitted:
        return {}
    for key in next(iter(submitted.values())):
        values = {v: s.get(key) for v, s in submitted.items()}
        if (all(isinstance(x, str) and x not in ids for x in values.values())
                and len(set(values.values())) > 1):
            return values
    return {}


def masked_prompt(task_id: str, variant: str) -> str:
    """The variant's prompt with the fixture's record ids masked."""
    task = load_task(task_id)
    ids = sorted(load_fixture(task.fixture).records, key=len, reverse=True)
    return re.sub("|".join(map(re.escape, ids)), "<record>", task.variant(variant).prompt)


@functools.cache
def branching_tasks() -> tuple[str, ...]:
    """The branching tasks (see the module docstring), in task order."""
    return tuple(task.id for task in load_tasks() if blind_pairs(task.id))


def blind_pairs(task_id: str) -> list[tuple[str, str]]:
    """Pairs of variants with the same masked prompt and different decisions."""
    chosen = decisions(task_id)
    return [(v, w) for v in chosen for w in chosen if v < w and chosen[v] != chosen[w]
            and masked_prompt(task_id, v) == masked_prompt(task_id, w)]
