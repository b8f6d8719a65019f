"""What a newcomer's walkthrough met: ``wm fidelity`` showed no progress when stderr was not a
terminal (a log, CI), while ``floor run`` did; ``sim scenarios`` refused the env ids that
``sim list`` prints; and ``examples/ray_rollouts.py`` ignored a ``--backend`` given with an
AgentFloor id."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.backends import parse_backend_arg
from agentworld_envs.cli import main, run_command
from agentworld_envs.domains import DOMAINS
from agentworld_envs.registration import ENV_IDS
from tests.helpers.examples import load_example

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


class _Stop(Exception):
    """Raised by the stand-in RayVectorEnv: the test has what it needs, no Ray starts."""


@pytest.fixture
def ray_rollouts(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The example with ``RayVectorEnv`` replaced: it records its keyword arguments and stops."""
    example = load_example("ray_rollouts", monkeypatch)
    example.made = []

    def made(env_id: str, num_envs: int, **kwargs: Any) -> None:
        example.made.append((env_id, kwargs))
        raise _Stop

    monkeypatch.setattr(example, "RayVectorEnv", made)
    return example


def _backend_made(example: Any, argv: list[str]) -> dict[str, Any] | None:
    """The backend (as a config) that ``argv`` makes the example's envs with; None: none."""
    example.made.clear()
    with pytest.raises(_Stop):
        example.main(argv)
    [(_, kwargs)] = example.made
    given = kwargs.get("backend")
    return parse_backend_arg(given) if isinstance(given, str) else given


@pytest.mark.parametrize("backend", [
    "scripted", '{"name": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}'])
def test_ray_rollouts_refuses_a_backend_given_with_an_agentfloor_id_but_keeps_the_default(
        backend: str, ray_rollouts: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, the backend was dropped without a word and the real tools played."""
    argv = ["--env-id", "AgentFloor/B3-v0", "--backend", backend]
    assert run_command(lambda: ray_rollouts.main(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "error: argument --backend: AgentFloor/B3-v0 plays the real tools and takes no backend; "
        "drop --backend or give an AgentWorld id (see: "), err
    assert ray_rollouts.made == []  # refused before any env or Ray
    # without --backend both id families go on; an AgentWorld id takes one
    assert _backend_made(ray_rollouts, ["--env-id", "AgentFloor/B3-v0"]) is None
    assert _backend_made(ray_rollouts, ["--env-id", "AgentWorld/MCP-v0"]) == {"name": "scripted"}
    assert _backend_made(ray_rollouts, ["--env-id", "AgentWorld/MCP-v0", "--backend", backend]
                         ) == parse_backend_arg(backend)
