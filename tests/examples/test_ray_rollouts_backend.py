"""``examples/ray_rollouts.py`` refuses a ``--backend`` given with an AgentFloor id (it was
dropped without a word and the real tools played), and keeps its default for both id
families."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.backends import parse_backend_arg
from agentworld_envs.cli import run_command
from tests.helpers.examples import load_example


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


def test_ray_rollouts_gives_agentworld_envs_a_fault_budget(
        ray_rollouts: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, a dead world-model server gave every episode fallback observations, and the
    script printed their rewards and exited 0."""
    def budget(argv: list[str]) -> Any:
        ray_rollouts.made.clear()
        with pytest.raises(_Stop):
            ray_rollouts.main(argv)
        return ray_rollouts.made[0][1].get("max_faults", "absent")

    assert budget(["--env-id", "AgentWorld/MCP-v0"]) == 3
    assert budget(["--env-id", "AgentWorld/MCP-v0", "--max-faults", "-1"]) == -1
    assert budget(["--env-id", "AgentFloor/B3-v0"]) == "absent"
    argv = ["--env-id", "AgentFloor/B3-v0", "--max-faults", "5"]
    assert run_command(lambda: ray_rollouts.main(argv)) == 2
    assert "argument --max-faults: AgentFloor/B3-v0 plays the real tools and takes no " \
           "world-model fault budget" in capsys.readouterr().err
