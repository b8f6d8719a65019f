"""The turn-based Parallel form's infos describe the step just played: an agent that did not
speak carries no flags of its earlier message."""

from __future__ import annotations

import pytest

from team_envs.text import arithmetic, countdown, logic_grid


@pytest.mark.parametrize("module", [arithmetic, countdown, logic_grid])
def test_an_invalid_message_is_flagged_on_its_own_step_only(module) -> None:
    par = module.parallel_env(n_agents=3)
    par.reset(seed=0)
    *_, infos = par.step({"agent_0": 123})  # not text: an invalid message
    assert infos["agent_0"]["invalid_action"] is True
    *_, infos = par.step({"agent_1": "x" * 10_000})  # clipped
    assert "invalid_action" not in infos["agent_0"]
    assert infos["agent_1"]["invalid_action"] is False and infos["agent_1"]["message_clipped"]
    assert infos["agent_0"] == {"role": "planner", "next_speaker": "agent_2", "active": False}
    _, rewards, *_, infos = par.step({"agent_2": "ANSWER: 0"})
    assert all("message_clipped" not in infos[name] for name in ("agent_0", "agent_1"))
    assert {info["team_reward"] for info in infos.values()} == set(rewards.values())
    assert all("verdict" in info and info["role"] for info in infos.values())
