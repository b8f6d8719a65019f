"""What the examples keep when a run stops part-way: ``llm_agent_floor.py`` prints each task's
result as the episode ends, so a server that fails at a later task loses none of them."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.backends import BackendError
from tests.helpers.examples import load_example


class _Backend:
    """Stands in for the OpenAI-compatible backend (``play`` is replaced too)."""

    def __enter__(self) -> _Backend:
        return self

    def __exit__(self, *_: object) -> None:
        return None


def test_a_server_failure_keeps_the_finished_episodes(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, every result was printed after the last episode: a server that failed at the
    third task printed only the error, and the two finished episodes were lost."""
    example = load_example("llm_agent_floor", monkeypatch)
    monkeypatch.setattr(example, "make_backend", lambda config: _Backend())

    def play(_backend: Any, task_id: str, variant: str, _sampling: Any) -> dict:
        if task_id == "C3":
            raise BackendError("POST http://127.0.0.1:9/v1/chat/completions failed")
        return {"task": task_id, "variant": variant, "turns": 2, "reward": 1.0, "failed": []}

    monkeypatch.setattr(example, "play", play)
    with pytest.raises(SystemExit, match="^llm_agent_floor: the model server failed: POST "):
        example.main(["--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                      "--tasks", "A1,B3,C3"])
    assert capsys.readouterr().out.splitlines() == [
        "A1 v0: reward 1.0 in 2 turns; failed checks: none",
        "B3 v0: reward 1.0 in 2 turns; failed checks: none"]


def test_the_summary_counts_the_solved_tasks(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("llm_agent_floor", monkeypatch)
    monkeypatch.setattr(example, "make_backend", lambda config: _Backend())
    rewards = {"A1": 1.0, "B3": 0.0, "C3": 1.0}
    monkeypatch.setattr(example, "play", lambda _b, task_id, variant, _s: {
        "task": task_id, "variant": variant, "turns": 3, "reward": rewards[task_id],
        "failed": [] if rewards[task_id] else ["final_answer"]})
    example.main(["--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
    assert capsys.readouterr().out.splitlines() == [
        "A1 v0: reward 1.0 in 3 turns; failed checks: none",
        "B3 v0: reward 0.0 in 3 turns; failed checks: ['final_answer']",
        "C3 v0: reward 1.0 in 3 turns; failed checks: none",
        "solved 2/3"]
