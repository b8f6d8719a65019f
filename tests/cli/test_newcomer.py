"""A newcomer's mistakes get one line, exit status 2, before anything runs (the console
script's ``--debug`` in the wrong place, bad flags of the example scripts), and ``--help``
describes every argument."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentworld_envs.cli import build_parser, main
from tests.helpers.examples import EXAMPLES, HANG_GUARD_S

ROOT = EXAMPLES.parent
DEAD_SERVER = "http://127.0.0.1:9/v1"


def test_a_debug_flag_after_the_command_is_one_line_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only ``agentworld --debug COMMAND`` shows tracebacks: ``--debug`` after the command is
    not the console script's (``wm sft`` passes it to TRL's own ``--debug``)."""
    assert main(["floor", "report", str(tmp_path / "missing"), "--debug"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentworld: error: unrecognized arguments: "
                                                   "--debug"), err


@pytest.mark.parametrize(("script", "args", "said"), [
    ("sb3_ppo_floor.py", ["--tasks", "A02,Z9", "--timesteps", "256", "--eval-every", "256"],
     "unknown task id 'Z9'"),  # checked before A02 trains
    ("sb3_ppo_floor.py", ["--n-envs", "0"], "argument --n-envs: must be at least 1"),
    ("sb3_ppo_floor.py", ["--tasks", "A02", "--plot", "no-such-folder/curves.png"],
     "--plot no-such-folder/curves.png: its folder does not exist"),
    ("llm_agent_floor.py", ["--base-url", DEAD_SERVER, "--model", "m", "--tasks", "A1,Z9"],
     "unknown task id 'Z9'"),  # checked before A1 plays
    ("llm_agent_floor.py", ["--base-url", DEAD_SERVER, "--model", "m", "--tasks", "A1,B3",
                            "--variant", "i1"], "task B3 has no variant 'i1'"),
    ("llm_agent_floor.py", ["--base-url", "localhost:8000", "--model", "m"],
     "base_url must be an http:// or https:// URL"),
    ("simulated_rl.py", ["--num-envs", "0"], "argument --num-envs: must be at least 1"),
    ("simulated_rl.py", ["--base-url", "nope"], "base_url must be an http:// or https:// URL"),
    ("ray_rollouts.py", ["--num-envs", "6"], "num_envs (6) must be a multiple of group_size"),
    ("sim_to_real.py", ["--bogus"], "unrecognized arguments: --bogus"),
])
def test_an_examples_bad_flag_is_one_line(script: str, args: list[str], said: str,
                                          tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], cwd=tmp_path, capture_output=True,
        text=True, timeout=HANG_GUARD_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and said in last, done.stderr[-3000:]


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    """Every argument below ``parser`` whose ``--help`` says nothing about it."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _undocumented(sub, f"{path} {name}")
        elif not action.help:
            found.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return found


@pytest.mark.parametrize("group", ["floor", "team", "sim", "wm"])
def test_every_argument_of_the_commands_has_help(group: str) -> None:
    parser = build_parser()
    [groups] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert _undocumented(groups.choices[group], f"agentworld {group}") == []
