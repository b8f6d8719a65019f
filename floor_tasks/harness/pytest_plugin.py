"""A pytest plugin to run an agent on AgentFloor tasks inside a test and assert on the results.

Enable it in a ``conftest.py``::

    pytest_plugins = ["floor_tasks.harness.pytest_plugin"]

then::

    def test_my_agent(agentfloor):
        result = agentfloor.run(my_agent, tasks="tier:A,B")
        result.assert_tier_pass_rate("A", at_least=0.8)
        result.assert_passes("B1")

The agent is a callable ``agent(messages, tools) -> action string`` or a backend config dict
(``{"name": "openai", "model": ..., ...}``). Each run's ladder is printed in the terminal summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.report import render_ladder_text
from floor_tasks.harness.sweep_config import resolve_tasks
from floor_tasks.task import load_tasks

__all__ = ["Agent", "FloorResult", "AgentFloor", "agentfloor"]

Agent = Callable[[list[dict[str, Any]], list[dict[str, Any]]], str] | Mapping[str, Any]
_RESULTS = pytest.StashKey[list[tuple[str, "FloorResult"]]]()


@dataclass(frozen=True)
class FloorResult:
    """The run records of one :meth:`AgentFloor.run`, with assertions over them."""

    records: list[RunRecord]

    def _select(self, tier: str | None = None, task_id: str | None = None) -> list[RunRecord]:
        runs = [
            r for r in self.records
            if (tier is None or r.tier == tier) and (task_id is None or r.task_id == task_id)
        ]
        if not runs:
            what = f"tier {tier}" if tier else f"task {task_id}" if task_id else "any task"
            raise AssertionError(f"no runs of {what} in this result")
        return runs

    def pass_rate(self, tier: str | None = None, task_id: str | None = None) -> float:
        """The pass rate over all runs, or those of one tier or task."""
        runs = self._select(tier, task_id)
        return sum(r.passed for r in runs) / len(runs)

    def assert_pass_rate(self, at_least: float, tier: str | None = None) -> None:
        """Assert the pass rate (over all runs, or one tier's) is at least ``at_least``."""
        runs = self._select(tier)
        rate = sum(r.passed for r in runs) / len(runs)
        if rate < at_least:
            scope = f"tier {tier}" if tier else "overall"
            raise AssertionError(
                f"{scope} pass rate {rate:.0%} < {at_least:.0%}; failed runs:\n"
                + _describe_failures(runs)
            )

    def assert_tier_pass_rate(self, tier: str, at_least: float) -> None:
        """Assert one tier's pass rate is at least ``at_least``."""
        self.assert_pass_rate(at_least, tier=tier)

    def assert_passes(self, task_id: str) -> None:
        """Assert every run of ``task_id`` passed."""
        runs = self._select(task_id=task_id)
        if not all(r.passed for r in runs):
            raise AssertionError(f"{task_id} failed:\n" + _describe_failures(runs))

    def ladder(self) -> str:
        """The plain-text tier ladder of these runs."""
        return render_ladder_text(self.records)


def _describe_failures(runs: Sequence[RunRecord]) -> str:
    lines = []
    for run in runs:
        if run.passed:
            continue
        labels = ", ".join(run.verdict.failure_labels) or "no labels"
        lines.append(
            f"  {run.task_id}/{run.variant}: {run.verdict.failure_class or 'failed'} "
            f"({labels}; termination {run.trajectory.termination})"
        )
    return "\n".join(lines)


class AgentFloor:
    """Runs agents on AgentFloor tasks; the ``agentfloor`` fixture hands one to a test."""

    def __init__(self, on_result: Callable[[FloorResult], None] | None = None) -> None:
        self._on_result = on_result

    def run(
        self,
        agent: Agent,
        tasks: str | Sequence[str] = "all",
        variants: str | Sequence[str] = ("v0",),
        repeats: int = 1,
        seed: int = 0,
    ) -> FloorResult:
        """Run ``agent`` on each task × variant, ``repeats`` times (seeds ``seed + repeat``),
        one run after another on one backend, closed at the end.

        Args:
            agent: a callable ``agent(messages, tools) -> str`` or a backend config dict.
            tasks: ``"all"``, ``"tier:A,B"``, one task id, or a list of task ids.
            variants: one variant name or several.
            repeats: runs per task and variant.
            seed: the seed of the first repeat.

        Raises:
            TypeError: when ``agent`` is neither callable nor a dict.
            ValueError: on unknown task ids, ``repeats < 1`` or ``seed < 0``.
        """
        from floor_tasks.harness.agents import as_backend
        from floor_tasks.harness.runner import Job, run_jobs

        if not (callable(agent) or isinstance(agent, Mapping)):
            raise TypeError(f"agent must be a callable or a backend config dict, got {agent!r}")
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        tier_of = {t.id: t.tier for t in load_tasks()}
        task_ids = resolve_tasks(tasks, list(tier_of), tier_of)
        names = [variants] if isinstance(variants, str) else list(variants)
        backend = as_backend(agent)  # one backend (one model load) for every run
        try:
            result = FloorResult([
                next(run_jobs([Job(task_id, variant, repeat=repeat, seed=seed + repeat)],
                              backend))
                for task_id in task_ids
                for variant in names
                for repeat in range(repeats)
            ])
        finally:
            backend.close()
        if self._on_result is not None:
            self._on_result(result)
        return result


@pytest.fixture
def agentfloor(request: pytest.FixtureRequest) -> AgentFloor:
    """An :class:`AgentFloor` whose results are summarised at the end of the session."""
    results = request.config.stash.setdefault(_RESULTS, [])
    return AgentFloor(on_result=lambda result: results.append((request.node.nodeid, result)))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the ladder of every AgentFloor run made in the session."""
    results = config.stash.get(_RESULTS, [])
    if results:
        terminalreporter.section("AgentFloor")
        for nodeid, result in results:
            terminalreporter.write_line(nodeid)
            terminalreporter.write_line(result.ladder())
