"""Re-score a run corpus without calling any model, by replaying each run's actions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym

__all__ = ["rescore_record", "rescore"]


def rescore_record(record: dict[str, Any]) -> dict[str, Any]:
    """Replay a record's actions in a fresh env and return the record with a new verdict."""
    budget = record.get("settings", {}).get("max_steps")
    env = gym.make(f"AgentFloor/{record['task_id']}-v0",
                   **({"max_episode_steps": budget} if budget else {}))
    env.reset(seed=record.get("seed", 0), options={"variant": record["variant"]})
    info: dict[str, Any] = {}
    for action in record["actions"]:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    env.close()
    if "verdict" not in info:
        raise ValueError(f"run {record['run_id']}: its actions do not finish the episode")
    return {**record, "verdict": info["verdict"], "passed": info["verdict"]["passed"],
            "termination": info["termination"]}


def rescore(records: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Re-score every record; also return the run ids whose pass/fail changed."""
    rescored, changed = [], []
    for record in records:
        new = rescore_record(record)
        if new["passed"] != record.get("passed"):
            changed.append(record["run_id"])
        rescored.append(new)
    return rescored, changed
