"""What a newcomer's walkthrough met: ``wm fidelity`` showed no progress when stderr was not a
terminal (a log, CI), while ``floor run`` did; ``sim scenarios`` refused the env ids that
``sim list`` prints."""

from __future__ import annotations

import pytest

from agentworld_envs.cli import main
from agentworld_envs.domains import DOMAINS
from agentworld_envs.registration import ENV_IDS

FIDELITY = ["wm", "fidelity", "SAMPLE", "--backend", "scripted"]


def test_wm_fidelity_shows_its_progress_when_stderr_is_no_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    """capsys's stderr is no terminal, as a log's or CI's is; ``floor run`` draws there too."""
    assert main(FIDELITY) == 0
    assert "world-model: 100%" in capsys.readouterr().err


def test_wm_fidelity_no_progress_hides_the_bar(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*FIDELITY, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "|" in captured.out  # the table, alone


def test_sim_scenarios_takes_each_env_id_that_sim_list_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert listed == list(ENV_IDS)
    for env_id, domain in zip(listed, DOMAINS, strict=True):
        assert main(["sim", "scenarios", env_id]) == 0, capsys.readouterr().err
        by_id = capsys.readouterr()
        assert main(["sim", "scenarios", domain]) == 0
        assert by_id.err == "" and by_id.out == capsys.readouterr().out != ""


def test_sim_request_takes_an_env_id_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "request", "AgentWorld/Terminal-v0",
                 '[{"keystrokes": "ls\\n", "duration": 1}]']) == 0
    assert '"messages"' in capsys.readouterr().out


def test_sim_scenarios_still_refuses_an_unknown_name_and_suggests_an_env_id(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "scenarios", "AgentWorld/MCP-v1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("agentworld: error: argument domain: unknown domain "
                          "'AgentWorld/MCP-v1'; did you mean 'AgentWorld/MCP-v0'")
    assert "(list them: agentworld sim list)" in err
