"""Every script in examples/ runs to completion with a tiny budget, in a fresh interpreter."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
QUICK = re.compile(r"Quick check[^:]*:\s*``python examples/(?P<name>\S+)(?P<args>[^`]*)``")

QUICK_ONLY = {"simulated_rl.py", "teamtr_symbolic.py", "world_model_evidence.py",
              "sim_to_real.py"}
"""Examples whose own tests check their results; here their documented quick check has to run."""
CHECKED_BELOW = {"quickstart.py", "sb3_ppo_floor.py", "llm_agent_floor.py", "trl_grpo_floor.py"}
TESTED_ELSEWHERE = {"teamtr_evidence.py": "tests/test_teamtr_utils.py runs it with --quick",
                    "ray_rollouts.py": "tests/test_ray_vector.py runs its quick check on Ray",
                    "teamtr_reasoning.py": "tests/test_teamtr_reasoning_example.py runs it on "
                                           "a tiny LM",
                    "openenv_trl.py": "tests/test_serve.py runs its quick check on a server"}
NEEDS_A_SERVER = {"llm_agent_floor.py"}
HANG_GUARD_S = 3600
"""Only a hang ends an example run (a loaded 2-core machine took over 300 s for the TRL quick
check)."""


def quick_check(name: str) -> list[str]:
    """The arguments of the example's documented ``Quick check: ``python examples/...```` line."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / name).read_text(encoding="utf-8"))) or ""
    found = QUICK.search(doc)
    assert found and found["name"] == name, f"{name}'s docstring documents no quick check"
    return shlex.split(found["args"])


def run_example(name: str, *args: str, cwd: Path) -> str:
    """Run one example script; return its stdout, failing the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"},
        timeout=HANG_GUARD_S)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_every_example_has_a_smoke_test() -> None:
    scripts = {path.name for path in EXAMPLES.glob("*.py")}
    assert scripts == QUICK_ONLY | CHECKED_BELOW | set(TESTED_ELSEWHERE)
    for name in scripts - set(TESTED_ELSEWHERE) - NEEDS_A_SERVER:
        quick_check(name)


@pytest.mark.parametrize("name", sorted(QUICK_ONLY))
def test_example_quick_check_runs(name: str, tmp_path: Path) -> None:
    assert run_example(name, *quick_check(name), cwd=tmp_path).strip()


def test_quickstart_solves_its_task(tmp_path: Path) -> None:
    output = run_example("quickstart.py", *quick_check("quickstart.py"), cwd=tmp_path)
    assert "reward: 1.0" in output and "passed=False" not in output


def test_sb3_example_writes_its_curves(tmp_path: Path) -> None:
    output = run_example("sb3_ppo_floor.py", *quick_check("sb3_ppo_floor.py"), cwd=tmp_path)
    rows = [line.split("|")[1:5] for line in output.splitlines() if line.startswith("| A02 |")
            or line.startswith("| B2 |")]
    assert rows == [[" A02 ", " A0 ", " 5 ", " 4 "], [" B2 ", " B ", " 5 ", " 7 "]]
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")


def test_trl_example_quick_check_trains(tmp_path: Path) -> None:
    """Its one GRPO step has groups whose rollouts score differently, so a non-zero gradient."""
    output = run_example("trl_grpo_floor.py", *quick_check("trl_grpo_floor.py"), cwd=tmp_path)
    step = re.search(r"^step 1: reward (?P<reward>\S+) \(std (?P<std>\S+), (?P<differ>\d+)% of "
                     r"groups differ\), loss \S+, grad_norm (?P<grad_norm>\S+),", output, re.M)
    assert step, output
    assert float(step["grad_norm"]) > 0 and float(step["std"]) > 0, output
    assert int(step["differ"]) > 0 and 0 < float(step["reward"]) < 1, output
    assert "trained nothing" not in output


@pytest.mark.server
def test_llm_agent_example_against_transformers_serve(tiny_server: tuple[str, str],
                                                      tmp_path: Path) -> None:
    base_url, model = tiny_server
    output = run_example("llm_agent_floor.py", "--base-url", base_url, "--model", model,
                         "--tasks", "A01,A1", "--max-tokens", "24", cwd=tmp_path)
    lines = output.splitlines()
    assert lines[0].startswith("A01 v0: reward ") and lines[1].startswith("A1 v0: reward ")
    assert lines[-1] in ("solved 0/2", "solved 1/2", "solved 2/2")
