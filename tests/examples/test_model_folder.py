"""The TRL examples' ``--model`` is a local model folder, checked before any work: a mistyped
path was exit 1 with transformers' "Repo id must be in the form 'repo_name'..." error, and a
folder holding no model a tokenizer traceback."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from agentworld_envs.cli import run_command
from tests.helpers.examples import load_example


@pytest.mark.parametrize("example", ["trl_grpo_floor", "openenv_trl"])
def test_a_model_that_is_no_model_folder_is_one_line_and_exit_2(
        example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    main = load_example(example, monkeypatch).main
    cases = {tmp_path / "missing": "no such folder",
             tmp_path: "holds no model (no config.json or adapter_config.json)"}
    for model, message in cases.items():
        argv = ["--model", str(model), "--output_dir" if example == "trl_grpo_floor"
                else "--output-dir", str(tmp_path / "out")]
        code = run_command(functools.partial(main, argv))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()  # no work was done
