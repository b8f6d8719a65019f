"""The ``agentworld sim`` command group (built on its own parser; the main CLI wires it)."""

from __future__ import annotations

import argparse
import json

import pytest

from agentworld_envs.domains import generate_scenario
from agentworld_envs.sim.cli import add_commands, fidelity_report
from agentworld_envs.world.scenario import Scenario
from tests.helpers.floor_world import predicting, real_observations


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="agentworld sim")
    add_commands(parser)
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    return capsys.readouterr().out


def test_list_shows_every_env_with_its_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    lines = run(capsys, "list").splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["AgentWorld/Search-v0"] == ["20", "10", "yes"]
    assert rows["AgentWorld/Web-v0"] == ["20", "10", "no"]
    assert rows["AgentWorld/Floor-v0"][1] == "166" and len(rows) == 8


def test_scenarios_and_generate_print_valid_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    listed = run(capsys, "scenarios", "web", "--json").splitlines()
    assert len(listed) == 10
    assert all(Scenario.model_validate_json(line).domain == "web" for line in listed)
    generated = run(capsys, "generate", "mcp", "--seed", "5", "--count", "3").splitlines()
    assert [Scenario.model_validate_json(line) for line in generated] == [
        generate_scenario("mcp", seed) for seed in (5, 6, 7)]


def test_fidelity_of_a_perfect_and_of_a_placeholder_world_model(
        capsys: pytest.CaptureFixture[str]) -> None:
    perfect = json.dumps(predicting(real_observations("C3"), thinking="recall"))
    out = run(capsys, "fidelity", "--backend", perfect, "--tasks", "C3")
    assert out.splitlines()[1].split() == ["C3/v0", "3", "1.000", "1.000", "1.000"]
    assert out.splitlines()[-1].startswith("fallback observations: 0 of 3 steps")
    report = json.loads(run(capsys, "fidelity", "--backend", "scripted", "--tasks", "C3,E4",
                            "--json"))
    assert report["overall"]["exact"] == 0.0 and report["overall"]["structural"] == 0.0
    assert set(report["scenarios"]) == {"C3/v0", "E4/v0"}
    table = run(capsys, "fidelity", "--backend", "scripted", "--tasks", "C3")
    assert table.startswith("note: 3 of 3 steps were answered by the scripted placeholder, not "
                            "a world model: their scores are the placeholder's")
    assert report["placeholder_steps"] == 9 and "note:" not in out


def test_fidelity_report_counts_only_steps_the_world_model_answered() -> None:
    report = fidelity_report({"name": "scripted"}, ["A01/v0", "A1/v0"])
    assert report["scenarios"]["A01/v0"]["steps"] == 0  # a final answer needs no model
    assert report["scenarios"]["A1/v0"]["steps"] == 1


def test_request_shows_the_world_model_request_for_a_prompt_directory(
        capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "system_prompt.txt").write_text("MY TERMINAL PROMPT")
    out = json.loads(run(capsys, "request", "terminal", "[]", "--scenario",
                         "terminal-vim-save-quit", "--prompts", str(tmp_path)))
    assert out["messages"][0] == {"role": "system", "content": "MY TERMINAL PROMPT"}
    assert out["messages"][1]["content"].endswith("**Action:**\n```json\n[]\n```")
    assert out["sampling"]["top_k"] == 20 and out["sampling"]["max_tokens"] == 32768
