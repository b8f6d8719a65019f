"""Scoring on the real env: the greedy policy's rewards on the held-out variants, balanced
success over decisions, and its interval over seeds and items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trainers.common.intervals import seed_item_interval
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask

if TYPE_CHECKING:
    from trainers.experiments.sim_to_real.linear import LinearAgent
    from trainers.experiments.sim_to_real.ppo import PPOAgent


def evaluate(task: FloorTask | McpTask, agent: LinearAgent | PPOAgent) -> dict[str, float]:
    """The greedy policy's reward on each held-out variant of the real env (its own budget),
    each reset with its own seed (its place among the held-out variants), so that the order in
    which the env lists its candidates differs from item to item: a greedy policy that ties
    between candidates takes the first, and one order for every item would turn that into a
    systematic pick of one place."""
    return {variant: agent.play(variant, seed) for seed, variant in enumerate(task.eval)}


def balanced(task: FloorTask | McpTask, outcomes: dict[str, float]) -> float:
    """Balanced success: the mean over decisions of the success rate on the variants needing
    that decision, so that a policy blind to observations (one decision everywhere) scores
    0.5 at most on a floor task. An MCP family has one decision (answer), so this is its plain
    success rate."""
    by_decision: dict[str, list[float]] = {}
    for variant, reward in outcomes.items():
        by_decision.setdefault(task.decisions[variant], []).append(reward)
    return float(np.mean([np.mean(rewards) for rewards in by_decision.values()]))


def interval(task: FloorTask | McpTask, runs: list[dict[str, Any]]) -> tuple[float, float]:
    """A 95% hierarchical bootstrap interval of balanced success over seeds and held-out
    items together (:func:`~trainers.common.intervals.seed_item_interval`, the items grouped
    by decision)."""
    variants = list(runs[0]["items"])
    table = np.array([[run["items"][v] for v in variants] for run in runs])
    groups = [[i for i, v in enumerate(variants) if task.decisions[v] == d]
              for d in dict.fromkeys(task.decisions[v] for v in variants)]
    return seed_item_interval(table, groups)
