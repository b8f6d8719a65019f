"""Scoring on the real env: the greedy policy's rewards on the held-out variants, balanced
success over decisions, and its interval over seeds and items."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from agentworld_envs.protocol.tool_calls import parse_action
from floor_tasks.harness.stats import wilson_interval
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
    systematic pick of one place. ``calls``, when given, gets what each variant's
    episode did (:func:`call_names`)."""
    outcomes = {}
    for seed, variant in enumerate(task.eval):
        outcomes[variant] = agent.play(variant, seed)
        if calls is not None:
            calls[variant] = call_names(agent.last_actions, task.solution(variant))
    return outcomes


def call_names(actions: list[str], solution: list[str]) -> list[str]:
    """What a scored episode's actions did: each call's tool names, marked ``(other)`` where
    the call is not one of the reference solution's (another record's lookup), and
    ``answer`` for a final answer."""
    names = []
    for action in actions:
        parsed = parse_action(action)
        if parsed.is_final_answer:
            names.append("answer")
        else:
            name = "+".join(call.name for call in parsed.calls) or "?"
            names.append(name if action in solution else f"{name} (other)")
    return names


def final_calls(runs: list[dict[str, Any]]) -> dict[str, int]:
    """How often each sequence of calls (``get_ticket > answer``, a call repeated n times in a
    row as ``call xn``) was the final greedy policy's on a held-out item, over every seed, most
    frequent first."""
    counts: dict[str, int] = {}
    for run in runs:
        for calls in run["calls"].values():
            repeats = [(name, len(list(group))) for name, group in itertools.groupby(calls)]
            key = " > ".join(name if n == 1 else f"{name} x{n}" for name, n in repeats)
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
    """A 95% interval of balanced success over seeds and held-out items together. Every seed
    is scored on the same held-out items, a crossed design
    (:func:`~trainers.common.intervals.seed_item_interval`): the seeds' variance plus the
    items' within each decision, cut to 0..1."""
    variants = list(runs[0]["items"])
    table = np.array([[run["items"][v] for v in variants] for run in runs])
    groups = [[i for i, v in enumerate(variants) if task.decisions[v] == d]
              for d in dict.fromkeys(task.decisions[v] for v in variants)]
    return seed_item_interval(table, groups, limits=(0.0, 1.0))


def item_intervals(runs: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """Per seed, the 95% Wilson interval of success over its held-out items (balanced success
    where the decisions have equal numbers of items, as on C1's generated split). Beside the
    interval over seeds and items, which gives a perfect score no width, it says what the
    items alone allow."""
    return [tuple(round(x, 4) for x in wilson_interval(int(sum(run["items"].values())),
                                                        len(run["items"])))
            for run in runs]
