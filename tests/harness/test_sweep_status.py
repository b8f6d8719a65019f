"""A sweep's ``metadata.json`` says what happened (``finished`` only when every planned run is
recorded, else ``incomplete`` with the counts; ``interrupted`` on Ctrl-C, the records complete
by then kept), and ``floor run`` against a failing server ends with one line and no ladder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.cli import main
from floor_tasks.harness.agents import OracleBackend
from floor_tasks.harness.corpus_io import read_records
from floor_tasks.harness.sweep import run_sweep, single_model_config
from tests.cli.test_model_call_faults import backend, one_error_line, refusing
from tests.helpers.server import FakeOpenAIServer


def test_floor_run_against_a_failing_server(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(refusing) as server:
        assert main(["floor", "run", "--backend", json.dumps(backend(server)), "--tasks",
                     "A1,A2", "--out", str(tmp_path), "--no-progress"]) == 1
    err, out = one_error_line(capsys)
    assert err.startswith("agentworld: error: 2 of 2 agent model calls failed (2x ")
    assert "the server is on fire" in err and "no ladder is printed" in err
    assert "0 of 2 planned runs recorded, 2 failed" in err and "resume with: " in err
    assert out == ""
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert (metadata["status"], metadata["runs_planned"], metadata["runs_recorded"],
            metadata["runs_failed"], metadata["model_calls_failed"]) == (
        "incomplete", 2, 0, 2, 2)


class InterruptedOracle(OracleBackend):
    """The oracle, until Ctrl-C arrives during its ``calls``-th call."""

    def __init__(self, calls: int) -> None:
        self.calls, self.cancelled = calls, False

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls -= 1
        if not self.calls:
            raise KeyboardInterrupt
        return super().complete(requests)

    def cancel(self) -> None:
        self.cancelled = True


def test_ctrl_c_mid_sweep_keeps_the_finished_records_and_says_interrupted(
        tmp_path: Path) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A01"], repeats=4)
    agent = InterruptedOracle(calls=3)  # A01 takes one call: two runs end first
    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, tmp_path, progress=False, batch_size=1, make_agent=lambda _: agent)
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert (metadata["status"], metadata["runs_planned"], metadata["runs_recorded"]) == (
        "interrupted", 4, 2)
    assert len(read_records(tmp_path)) == 2 and agent.cancelled
    resumed = run_sweep(config, tmp_path, progress=False)
    assert (resumed.status, resumed.written, resumed.skipped) == ("finished", 2, 2)
