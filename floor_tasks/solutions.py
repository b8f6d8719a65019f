"""Reference solutions: the action strings that pass each task variant."""

from __future__ import annotations

import json

from floor_tasks.task import load_task

__all__ = ["solution"]


def solution(task_id: str, variant: int | str = 0) -> list[str]:
    """The reference solution of a task variant, as one action string per assistant turn.

    Example:
        >>> for action in solution("A1"):
        ...     print(action)
        {"name": "lookup_record", "arguments": {"record_id": "P104"}}
        Product P104 has status: active.
    """
    chosen = load_task(task_id).variant(variant)
    actions = []
    for step in chosen.task.solution:
        step = chosen.filled(step.model_dump(exclude_none=True))
        if "answer" in step:
            actions.append(step["answer"])
        else:
            calls = step.get("calls") or [step["call"]]
            actions.append(json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False))
    return actions
