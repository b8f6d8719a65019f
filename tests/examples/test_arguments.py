"""The examples' command lines as a new user meets them: ``--help`` describes every setting,
an argument the script cannot use is one line with exit status 2 before any work, and the SB3
example's ``--plot`` is checked before training, not when the curves are saved."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.cli import run_command
from tests.helpers.examples import EXAMPLES, ROOT, load_example

DEFAULT = re.compile(r"\(default: [^)]*\)")


def _run(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _option_help(usage: str) -> dict[str, str]:
    """Each option of an argparse ``--help`` text with its description (continuation lines
    joined)."""
    options: dict[str, str] = {}
    current = None
    for line in usage.split("\noptions:\n", 1)[1].splitlines():
        option = re.match(r"^  (-\S.*?)(?: {2,}(.*))?$", line)
        if option:
            current = option[1]
            options[current] = option[2] or ""
        elif current and line.startswith("    "):
            options[current] += " " + line.strip()
    return options


@pytest.mark.parametrize("name", ["quickstart.py", "simulated_rl.py", "ray_rollouts.py",
                                  "llm_agent_floor.py", "openenv_trl.py", "sb3_ppo_floor.py"])
def test_help_describes_every_setting(name: str, tmp_path: Path) -> None:
    """Before, ``--seed`` (simulated_rl, ray_rollouts, sb3_ppo_floor), ``--domain`` and
    ``--learning-rate`` (simulated_rl) and six of openenv_trl's eleven settings showed no
    description (openenv_trl's only ``(default: 2)``); quickstart played its episodes."""
    if name == "sb3_ppo_floor.py":
        pytest.importorskip("stable_baselines3")
    done = _run(name, "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {name}"), done.stderr
    options = _option_help(done.stdout)
    assert "-h, --help" in options
    bare = [option for option, text in options.items() if not DEFAULT.sub("", text).strip()]
    assert not bare, f"{name} --help describes nothing for {bare}"


def test_quickstart_refuses_an_argument_before_playing(tmp_path: Path) -> None:
    """Before, ``quickstart.py --bogus`` played its episodes and exited 0."""
    done = _run("quickstart.py", "--bogus", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: unrecognized arguments: --bogus (see: quickstart.py "
                           "--help)\n")


@pytest.fixture
def sb3_example(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``sb3_ppo_floor`` whose training is replaced: any call records it and returns a curve."""
    pytest.importorskip("stable_baselines3")
    example = load_example("sb3_ppo_floor", monkeypatch)
    example.trained = []

    def train(task_id: str, _args: Any) -> list[tuple[int, float]]:
        example.trained.append(task_id)
        return [(0, 0.0), (256, 0.5)]

    monkeypatch.setattr(example, "train", train)
    return example


@pytest.mark.parametrize(("plot", "message"), [
    ("curves.txt", "--plot curves.txt: name a .png file"),
    ("curves", "--plot curves: name a .png file"),
])
def test_the_sb3_plot_must_be_a_png_before_training(
        plot: str, message: str, sb3_example: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``--plot curves.txt`` trained every task, then matplotlib's ``Format 'txt' is
    not supported`` left a traceback (exit 1); ``--plot curves`` wrote ``curves.png`` and
    printed ``curves saved to curves``."""
    monkeypatch.chdir(tmp_path)
    argv = ["--tasks", "A02", "--timesteps", "256", "--eval-every", "256", "--plot", plot]
    assert run_command(lambda: sb3_example.main(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert sb3_example.trained == [] and list(tmp_path.iterdir()) == []


def test_the_sb3_plot_needs_matplotlib_before_training(
        sb3_example: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before, without the ``plot`` extra, ``--plot`` trained every task, then ``import
    matplotlib`` failed with a traceback."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    argv = ["--tasks", "A02", "--timesteps", "256", "--eval-every", "256", "--plot",
            str(tmp_path / "curves.png")]
    assert run_command(lambda: sb3_example.main(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install "agentworld[plot]"' in err, err
    assert sb3_example.trained == []


def test_the_sb3_plot_is_saved_where_it_says(sb3_example: Any, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "curves.PNG"
    sb3_example.main(["--tasks", "A02", "--timesteps", "256", "--eval-every", "256", "--plot",
                      str(path)])
    assert f"curves saved to {path}" in capsys.readouterr().out
    assert sb3_example.trained == ["A02"]
    assert [p.name for p in tmp_path.iterdir()] == ["curves.PNG"]
    assert path.read_bytes().startswith(b"\x89PNG")
