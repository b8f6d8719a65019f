"""Every script in examples/ runs to completion with a tiny budget, in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

RUN_ONLY = {
    "simulated_rl.py": ["--domain", "search", "--updates", "2", "--num-envs", "2"],
    "teamtr_symbolic.py": ["--total-episodes", "256", "--log-dir", ""],
    "trl_grpo_floor.py": ["--max-steps", "1", "--output-dir", "out"],
    "world_model_evidence.py": ["--out", "wm", "--minutes", "0.02", "--explore-repeats", "1",
                                "--eval-items", "4", "--max-tokens", "8"],
}
"""Examples whose own tests check their results; here they only have to run, tiny budget."""
CHECKED_BELOW = {"quickstart.py", "sb3_ppo_floor.py", "llm_agent_floor.py"}
TESTED_ELSEWHERE = {"teamtr_evidence.py": "tests/test_teamtr_utils.py runs it with --quick"}


def run_example(name: str, *args: str, cwd: Path) -> str:
    """Run one example script; return its stdout, failing the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}, timeout=300)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_every_example_has_a_smoke_test() -> None:
    scripts = {path.name for path in EXAMPLES.glob("*.py")}
    assert scripts == set(RUN_ONLY) | CHECKED_BELOW | set(TESTED_ELSEWHERE)


@pytest.mark.parametrize("name", sorted(RUN_ONLY))
def test_example_runs(name: str, tmp_path: Path) -> None:
    assert run_example(name, *RUN_ONLY[name], cwd=tmp_path).strip()


def test_quickstart_solves_its_task(tmp_path: Path) -> None:
    output = run_example("quickstart.py", cwd=tmp_path)
    assert "reward: 1.0" in output and "passed=False" not in output


def test_sb3_example_writes_its_curves(tmp_path: Path) -> None:
    plot = tmp_path / "curves.png"
    output = run_example("sb3_ppo_floor.py", "--tasks", "A02,B2", "--timesteps", "256",
                         "--eval-every", "256", "--plot", str(plot), cwd=tmp_path)
    rows = [line.split("|")[1:5] for line in output.splitlines() if line.startswith("| A02 |")
            or line.startswith("| B2 |")]
    assert rows == [[" A02 ", " A0 ", " 5 ", " 4 "], [" B2 ", " B ", " 5 ", " 7 "]]
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.server
def test_llm_agent_example_against_transformers_serve(tiny_server: tuple[str, str],
                                                      tmp_path: Path) -> None:
    base_url, model = tiny_server
    output = run_example("llm_agent_floor.py", "--base-url", base_url, "--model", model,
                         "--tasks", "A01,A1", "--max-tokens", "24", cwd=tmp_path)
    lines = output.splitlines()
    assert lines[0].startswith("A01 v0: reward ") and lines[1].startswith("A1 v0: reward ")
    assert lines[-1] in ("solved 0/2", "solved 1/2", "solved 2/2")
