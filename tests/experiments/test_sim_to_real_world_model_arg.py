"""``examples/sim_to_real.py --world-model`` is checked as every command-line backend is, before
anything is made: a spec that is not valid JSON was a JSONDecodeError traceback (after the out
folder was made), and a spec without a ``name`` failed as "unknown backend None" only when the
first simulated arm began, after the arms before it had been trained and scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.cli import run_command
from trainers.experiments.sim_to_real import main


@pytest.mark.parametrize(("spec", "says"), [
    ('{"name": ', "error: backend is not valid JSON: Expecting value"),
    ('{"nam": "scripted"}', 'error: a backend given as JSON needs a "name" field'),
    ("scriptd", "error: unknown backend 'scriptd'; did you mean 'scripted'?"),
])
def test_a_bad_world_model_is_one_line_exit_2_before_anything_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, says: str) -> None:
    out = tmp_path / "out"
    assert run_command(lambda: main(["--out", str(out), "--arms", "untrained,sim", "--seeds",
                                     "1", "--updates", "1", "--batch", "2",
                                     "--world-model", spec])) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(says) and captured.err.count("\n") == 1
    assert captured.out == "" and not out.exists()  # no arm was run
