"""Scoring on the real env: the greedy policy's rewards on the held-out variants, balanced
success over decisions, and its interval over seeds and items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from agentworld_envs.protocol.tool_calls import parse_action
from trainers.common.intervals import seed_item_interval
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask

if TYPE_CHECKING:
    from trainers.experiments.sim_to_real.linear import LinearAgent
    from trainers.experiments.sim_to_real.ppo import PPOAgent


def evaluate(task: FloorTask | McpTask, agent: LinearAgent | PPOAgent,
             calls: dict[str, list[str]] | None = None) -> dict[str, float]:
    """The greedy policy's reward on each held-out variant of the real env (its own budget),
    each reset with its own seed (its place among the held-out variants), so that the order in
    which the env lists its candidates differs from item to item: a greedy policy that ties
    between candidates takes the first, and one order for every item would turn that into a
    systematic pick of one place. ``calls``, when given, gets each variant's
    ``agent.last_calls``."""
    outcomes = {}
    for seed, variant in enumerate(task.eval):
        outcomes[variant] = agent.play(variant, seed)
        if calls is not None:
            calls[variant] = list(agent.last_calls)
    return outcomes


def call_names(action: str) -> str:
    """What an action does, for the record of a scored episode: its tools' names, or
    ``answer``."""
    parsed = parse_action(action)
    return "answer" if parsed.is_final_answer else "+".join(c.name for c in parsed.calls) or "?"


def final_calls(runs: list[dict[str, Any]]) -> dict[str, int]:
    """How often each sequence of calls (``get_ticket > answer``) was the greedy policy's on a
    held-out item at the end, over every seed, most frequent first."""
    counts: dict[str, int] = {}
    for run in runs:
        for calls in run["calls"].values():
            key = " > ".join(calls)
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


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
