"""Re-score a run corpus without calling any model, by replaying each run's actions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym

from floor_tasks.harness.record import RunRecord, Verdict

__all__ = ["UnfinishedRunError", "rescore_record", "rescore"]


class UnfinishedRunError(ValueError):
    """A record whose actions, replayed, do not finish its episode; ``str()`` names the run."""


def rescore_record(record: RunRecord) -> RunRecord:
    """Replay a record's actions in a fresh env and return the record with a new verdict,
    and with what the env made of the actions (call log, final answer, termination) from the
    replay the verdict was read from.

    Raises:
        UnfinishedRunError: when the actions end before the episode does.
    """
    budget = record.settings.max_steps
    env = gym.make(f"AgentFloor/{record.task_id}-v0",
                   **({"max_episode_steps": budget} if budget else {}))
    env.reset(seed=record.seed, options={"variant": record.variant})
    info: dict[str, Any] = {}
    for action in record.trajectory.actions:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    trace = env.unwrapped.trace
    env.close()
    if "verdict" not in info:
        raise UnfinishedRunError(f"run {record.run_id}: its actions do not finish the episode")
    trajectory = record.trajectory.model_copy(update={
        "termination": trace.termination, "call_log": trace.calls,
        "final_text": trace.final_answer})
    return record.model_copy(update={
        "verdict": Verdict.model_validate(info["verdict"]), "passed": info["verdict"]["passed"],
        "trajectory": trajectory})


def rescore(records: Iterable[RunRecord]) -> tuple[list[RunRecord], list[str]]:
    """Re-score every record; also return the run ids whose pass/fail changed."""
    rescored, changed = [], []
    for record in records:
        new = rescore_record(record)
        if new.passed != record.passed:
            changed.append(record.run_id)
        rescored.append(new)
    return rescored, changed
