"""Every script in examples/ runs to completion with a tiny budget, in a fresh interpreter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.examples import EXAMPLES, quick_check, run_example

QUICK_ONLY = {
    "teamtr_symbolic.py": (r"team reward on evaluation episodes: \d\.\d{3} -> \d\.\d{3}",
                           r"agent_1 replaced", r"team reward: "),
    "world_model_evidence.py": (r"'floor_train': [1-9]\d*, 'floor_val': [1-9]",
                                r"'mcp': [1-9]\d*, 'mcp_val_family'"),
    "sim_to_real.py": tuple(rf"(?m)^{re.escape(arm)} +balanced success, held-out real variants "
                            for arm in ("untrained", "sim", "sim-garbage", "real",
                                        "real-capped+sim")),
}
"""Examples tested by their documented quick check: what its output must show."""
CHECKED_BELOW = {"quickstart.py", "sb3_ppo_floor.py", "llm_agent_floor.py", "trl_grpo_floor.py"}
TESTED_ELSEWHERE = {
    "teamtr_evidence.py": "tests/trainers/test_teamtr_utils.py runs its experiment --quick",
    "simulated_rl.py": "tests/examples/test_sim_example.py runs its quick check",
    "ray_rollouts.py": "tests/distributed/test_ray_vector.py runs its quick check on Ray",
    "teamtr_reasoning.py": "tests/examples/test_teamtr_reasoning.py runs it on a tiny LM",
    "openenv_trl.py": "tests/serve/test_serve.py runs its quick check on a server"}
NEEDS_A_SERVER = {"llm_agent_floor.py"}


def test_every_example_has_a_smoke_test() -> None:
    scripts = {path.name for path in EXAMPLES.glob("*.py")}
    assert scripts == set(QUICK_ONLY) | CHECKED_BELOW | set(TESTED_ELSEWHERE)
    for name in scripts - set(TESTED_ELSEWHERE) - NEEDS_A_SERVER:
        quick_check(name)


@pytest.mark.parametrize("name", ["teamtr_evidence.py", "teamtr_reasoning.py"])
def test_an_experiments_entry_point_reaches_its_flags(name: str, tmp_path: Path) -> None:
    """The thin entry points whose experiment is tested through the package still run."""
    output = run_example(name, "--help", cwd=tmp_path)
    assert output.startswith(f"usage: {name}") and "--out" in output


@pytest.mark.parametrize("name", sorted(QUICK_ONLY))
def test_example_quick_check_shows_its_result(name: str, tmp_path: Path) -> None:
    output = run_example(name, *quick_check(name), cwd=tmp_path)
    missing = [pattern for pattern in QUICK_ONLY[name] if not re.search(pattern, output)]
    assert not missing, f"{name}'s output lacks {missing}:\n{output[-3000:]}"


def test_quickstart_solves_its_task(tmp_path: Path) -> None:
    output = run_example("quickstart.py", *quick_check("quickstart.py"), cwd=tmp_path)
    assert "reward: 1.0" in output and "passed=False" not in output


def test_sb3_example_writes_its_curves(tmp_path: Path, monkeypatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # where SB3's default logger writes
    monkeypatch.delenv("SB3_LOGDIR")  # the suite's own folder for SB3 logs
    output = run_example("sb3_ppo_floor.py", *quick_check("sb3_ppo_floor.py"), cwd=tmp_path)
    rows = [line.split("|")[1:5] for line in output.splitlines() if line.startswith("| A02 |")
            or line.startswith("| B2 |")]
    assert rows == [[" A02 ", " A0 ", " 5 ", " 4 "], [" B2 ", " B ", " 5 ", " 7 "]]
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")
    assert not list(scratch.glob("SB3-*"))  # no empty SB3 log folder per learn()


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
