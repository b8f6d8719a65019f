"""A backend setting the backend refuses (``timeout_s: -1``) is refused by the config check
that every command runs before it makes anything: one line, exit 2. It was a raw
``ValueError`` from the constructor, after ``wm fidelity --out`` had begun its journal, so
the next run was refused until ``--resume`` was passed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import check_backend_config
from agentworld_envs.backends.registry import BackendConfigError
from agentworld_envs.cli import main
from tests.world_model.test_bench_faults import items_file

SERVER = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(("setting", "message"), [
    ({"timeout_s": -1}, "timeout_s must be a number > 0, not -1"),
    ({"timeout_s": float("nan")}, "timeout_s must be a number > 0, not nan"),
    ({"max_retries": "3"}, "max_retries must be an integer >= 0, not '3'"),
    ({"concurrency": 0, "max_retry_after_s": -1},
     "max_retry_after_s must be a number >= 0, not -1; concurrency must be an integer >= 1, "
     "not 0"),
    ({"base_url": 5}, "base_url must name at least one server"),
    ({"base_url": []}, "base_url must name at least one server"),
])
def test_an_openai_setting_the_backend_refuses_fails_the_config_check(
        setting: dict[str, Any], message: str) -> None:
    with pytest.raises(BackendConfigError) as info:
        check_backend_config({**SERVER, **setting})
    assert str(info.value) == f"backend 'openai': {message}"


def test_an_hf_setting_the_backend_refuses_fails_the_config_check(tiny_lm_dir: Path) -> None:
    with pytest.raises(BackendConfigError, match="^backend 'hf': batch_size must be an integer "
                                                 ">= 1, not 0$"):
        check_backend_config({"name": "hf", "model": str(tiny_lm_dir), "batch_size": 0})


@pytest.mark.parametrize("config", [
    {**SERVER, "timeout_s": -1},
    {"name": "hf", "model": "tiny-model-folder", "batch_size": 0},
])
def test_wm_fidelity_refuses_it_before_making_its_output(
        config: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny-model-folder").mkdir()
    config = {**config, "model": str(tmp_path / config["model"])} if config["name"] == "hf" \
        else config
    out = tmp_path / "out"
    argv = ["wm", "fidelity", str(items_file(tmp_path)), "--backend", json.dumps(config),
            "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not out.exists()
