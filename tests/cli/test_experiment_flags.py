"""``examples/teamtr_reasoning.py``: settings that leave nothing to compare are one line, exit
status 2, before any run. Before, ``--seeds 0`` (or -1) ended in a traceback from the
summary ("table must be seeds x items"), ``--methods ''`` began scoring the untrained team,
and an unknown method exited with status 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.cli import run_command

pytest.importorskip("torch")


@pytest.mark.parametrize(("argv", "message"), [
    (["--seeds", "0"], "--seeds must be at least 1, got 0"),
    (["--seeds", "-1"], "--seeds must be at least 1, got -1"),
    (["--methods", ""], "--methods: name one or more of ('teamtr', "),
    (["--methods", "teamtr,nosuch"], "--methods: unknown methods ['nosuch']; choose from"),
])
def test_settings_that_compare_nothing_are_one_line_before_any_run(
        argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from trainers.experiments import teamtr_reasoning

    def ran(*_: Any) -> None:
        raise AssertionError("a run began")

    monkeypatch.setattr(teamtr_reasoning, "untrained", ran)
    monkeypatch.setattr(teamtr_reasoning, "run", ran)
    out = tmp_path / "results.json"
    assert run_command(lambda: teamtr_reasoning.main([*argv, "--out", str(out)])) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []
