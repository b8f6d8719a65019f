"""A backend spec naming a file that is not there (a ``replay`` path) is bad input on every
command that takes one: one line on stderr, exit status 2, nothing written before it and no
folder made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends.registry import BackendConfigError, check_backend_config
from agentworld_envs.cli import main
from agentworld_envs.cli_errors import UsageError


def _replay(path: Path) -> str:
    return json.dumps({"name": "replay", "path": str(path)})


def _argv(command: str, backend: str, tmp_path: Path) -> list[str]:
    if command == "floor sweep":
        config = tmp_path / "sweep.yaml"
        config.write_text(json.dumps({  # YAML reads JSON
            "sweep_name": "s", "results_dir": str(tmp_path / "out"), "tasks": ["A1"],
            "models": [{"name": "m", "backend": json.loads(backend)}]}))
        return ["floor", "sweep", str(config), "--no-progress"]
    return {
        "floor run": ["floor", "run", "--tasks", "A1", "--out", str(tmp_path / "out"),
                      "--backend", backend],
        "sim fidelity": ["sim", "fidelity", "--backend", backend, "--tasks", "C3"],
        "wm fidelity": ["wm", "fidelity", "SAMPLE", "--backend", backend],
        "wm bench --backend": ["wm", "bench", "SAMPLE", "--backend", backend,
                               "--judge", "scripted"],
        "wm bench --judge": ["wm", "bench", "SAMPLE", "--backend", "scripted",
                             "--judge", backend],
    }[command]


@pytest.mark.parametrize("command", ["floor run", "floor sweep", "sim fidelity", "wm fidelity",
                                     "wm bench --backend", "wm bench --judge"])
def test_a_missing_replay_file_is_one_line_and_status_2_before_anything_else(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-calls.jsonl"
    argv = _argv(command, _replay(missing), tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err == f"agentworld: error: no such file or directory: {missing} (check the path)\n"
    assert out == ""
    assert not (tmp_path / "out").exists()


def test_the_backend_check_refuses_a_missing_replay_file_after_its_keys(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-calls.jsonl"
    with pytest.raises(FileNotFoundError) as raised:
        check_backend_config({"name": "replay", "path": str(missing)})
    assert raised.value.filename == str(missing)
    with pytest.raises(BackendConfigError, match="unknown key 'modle'"):  # keys come first
        check_backend_config({"name": "replay", "path": str(missing), "modle": "m"})
    recorded = tmp_path / "calls.jsonl"
    recorded.write_text("")
    check_backend_config({"name": "replay", "path": str(recorded), "model": "m"})


def test_a_missing_local_model_folder_is_one_line_and_no_hub_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``runs/wm`` with ``runs/`` here reads like ``org/name``: it is refused as a missing
    folder before anything is made, not looked up on the hub."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    backend = json.dumps({"name": "hf", "model": "runs/wm"})
    assert main(["wm", "fidelity", "SAMPLE", "--backend", backend]) == 2
    out, err = capsys.readouterr()
    assert err == ("agentworld: error: backend 'hf': model 'runs/wm' is no folder (runs/ is, "
                   "so it is no hub name)\n")
    assert out == ""
    with pytest.raises(UsageError, match=r"backend 'hf': model 'runs/wm' is no folder \(runs/ "
                                         r"is, so it is no hub name\)"):
        check_backend_config({"name": "hf", "model": "runs/wm"})
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    check_backend_config({"name": "hf", "model": "HuggingFaceTB/SmolLM2-135M"})  # a hub name


@pytest.mark.parametrize("command", ["floor run", "wm fidelity"])
def test_a_replay_path_that_is_a_folder_says_so(command: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """It said "no such file or directory" of a folder that exists."""
    argv = _argv(command, _replay(tmp_path), tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "is a folder, not a file of recorded completions" in err and err.count("\n") == 1
    assert out == "" and not (tmp_path / "out").exists()
