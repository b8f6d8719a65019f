"""A negative seed (which no env reset takes) is a sweep-file error, exit 2, before the corpus
is made: not one run error per planned run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.cli import main

SWEEP = """sweep_name: neg
tasks: [A1, A2]
models:
  - name: m
    backend: {name: oracle}
    seed: %s
interventions:
  - name: i
    seed: %s
"""


@pytest.mark.parametrize(("model_seed", "intervention_seed", "field"), [
    (-3, 0, "6: models.0.seed"), (0, -1, "9: interventions.0.seed")])
def test_a_negative_seed_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], model_seed: int,
        intervention_seed: int, field: str) -> None:
    sweep = tmp_path / "neg.yaml"
    sweep.write_text(SWEEP % (model_seed, intervention_seed), encoding="utf-8")
    out = tmp_path / "corpus"
    assert main(["floor", "sweep", str(sweep), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"neg.yaml:{field}: input should be greater than or equal to 0" in err
    assert not out.exists()


@pytest.mark.parametrize("temperature", [".inf", ".nan"])
def test_a_temperature_that_is_no_finite_number_is_refused_before_anything_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], temperature: str) -> None:
    """It reached every request of the arm, each refused by the server."""
    sweep = tmp_path / "hot.yaml"
    sweep.write_text((SWEEP % (0, 0)).replace("seed: 0\n", f"temperature: {temperature}\n", 1),
                     encoding="utf-8")
    out = tmp_path / "corpus"
    assert main(["floor", "sweep", str(sweep), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "hot.yaml:6: models.0.temperature: input should be a finite number" in err
    assert not out.exists()


def test_the_pytest_plugin_refuses_a_negative_seed() -> None:
    """It failed inside the env's reset."""
    from floor_tasks.harness.pytest_plugin import AgentFloor

    with pytest.raises(ValueError, match="^seed must be >= 0, got -1$"):
        AgentFloor().run({"name": "oracle"}, tasks="A1", seed=-1)
