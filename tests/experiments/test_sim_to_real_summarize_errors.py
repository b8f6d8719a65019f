"""``examples/sim_to_real.py --summarize PATH`` on a file that is not a results file is one line,
exit 2. Before, each was a traceback: a ValueError for a file that is not JSON or holds no runs,
a KeyError for a compilation entry without ``runs_from``, an AttributeError for a JSON list."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.cli import run_command
from trainers.experiments.sim_to_real import main


@pytest.mark.parametrize(("text", "says"), [
    ("not json", "not a results file (Expecting value"),
    ("[1, 2]", "not a results file (its JSON is not an object)"),
    ('{"args": {}, "summary": {}}', "results.json holds no runs"),
    ('{"C1": {"summary": {}, "runs": {}}}', "C1 holds no runs_from"),
])
def test_summarizing_a_file_that_is_not_a_results_file_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str) -> None:
    path = tmp_path / "some.json"
    path.write_text(text)
    assert run_command(lambda: main(["--summarize", str(path)])) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith(f"error: --summarize: {path}: ")
    assert says in error
    assert path.read_text() == text  # left as it was
