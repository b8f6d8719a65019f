"""A domain without a default world model says how to name one, to gym.make and on the command
line alike."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends.embedded import NoDefaultWorldModelError
from agentworld_envs.cli import main


def test_serve_without_a_backend_names_the_flag_and_gym_make_the_argument(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "AgentWorld/Search-v0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentworld: error: domain 'search' has no")
    assert "--backend scripted" in err and "--backend '{\"name\": \"openai\"" in err
    with pytest.raises(NoDefaultWorldModelError) as raised:
        gym.make("AgentWorld/Search-v0")
    assert str(raised.value) in err  # one message for both audiences
    assert 'backend="scripted"' in str(raised.value) and "gym.make" in str(raised.value)
