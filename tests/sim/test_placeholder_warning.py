"""The placeholder backend's warning points at the user's line, not into gymnasium."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.sim import simulator


@pytest.mark.parametrize("make", [
    lambda: gym.make("AgentWorld/Search-v0", backend="scripted"),
    lambda: gym.make_vec("AgentWorld/Search-v0", num_envs=2, backend="scripted"),
])
def test_the_placeholder_warning_names_the_callers_file(make, monkeypatch) -> None:
    monkeypatch.setattr(simulator, "_warned_placeholder", False)
    with pytest.warns(UserWarning, match="placeholders") as caught:
        make().close()
    assert [w.filename for w in caught if "placeholders" in str(w.message)] == [__file__]
