"""Real AgentFloor observations, and scripted world models that predict given observations."""

from __future__ import annotations

import floor_tasks
from floor_tasks.env import FloorEnv


def real_observations(task_id: str, variant: str = "v0") -> list[str]:
    """The real env's observations along the variant's reference solution."""
    env = FloorEnv(task_id, variant=variant)
    env.reset(seed=0)
    return [env.step(action)[0] for action in floor_tasks.solution(task_id, variant)]


def predicting(observations: list[str], thinking: str = "") -> dict:
    """A scripted world model that predicts the given observation for each turn (after
    ``<think>thinking</think>`` when given)."""
    think = f"<think>{thinking}</think>" if thinking else ""
    return {"name": "scripted", "rules": [
        {"match": f"^### Turn {turn}\n", "reply": f"{think}<predicted_observation>\n"
                                                  f"{observation}\n</predicted_observation>"}
        for turn, observation in enumerate(observations, start=1)]}
