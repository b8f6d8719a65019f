"""The pytest plugin makes one backend from a config for all its runs (one model load, not one
per run) and closes it when they end."""

from __future__ import annotations

from typing import Any

import pytest

import floor_tasks.harness.agents as agents
from agentworld_envs.backends import Backend
from floor_tasks.harness.pytest_plugin import AgentFloor


def test_one_backend_for_all_runs_closed_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Backend] = []
    closed: list[Backend] = []
    make_backend = agents.make_backend

    def counted(config: Any) -> Backend:
        backend = make_backend(config)
        made.append(backend)
        monkeypatch.setattr(backend, "close", lambda: closed.append(backend))
        return backend

    monkeypatch.setattr(agents, "make_backend", counted)
    result = AgentFloor().run({"name": "oracle"}, tasks="tier:A", repeats=2)
    assert [r.task_id for r in result.records] == [t for t in ("A1", "A2", "A3", "A4", "A5")
                                                   for _ in range(2)]
    assert result.pass_rate() == 1.0
    assert len(made) == 1 and closed == made
