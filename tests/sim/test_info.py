"""What ``info`` hands out is the caller's: changing it changes no scenario, env or episode."""

from __future__ import annotations

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import make

BOARD = '{"name": "get_board", "arguments": {"board_key": "OPS"}}'


def test_editing_the_reset_infos_tools_leaves_the_scenario_alone() -> None:
    """The tools were the built-in scenario's own dicts: a caller that edited them (an agent
    framework adding ``strict``, renaming a tool) changed the scenario for every env of the
    process, and the agent's next call of the real tool was refused as unknown."""
    options = {"scenario": "mcp-kanban-doing-count"}
    env = make("mcp", backend="scripted")
    _, info = env.reset(seed=0, options=options)
    expected = [tool["function"]["name"] for tool in info["tools"]]
    assert "get_board" in expected
    for tool in info["tools"]:
        tool["function"]["name"] = "renamed"
    info["tools"].clear()
    other = make("mcp", backend="scripted")
    for fresh in (env, other):
        _, info = fresh.reset(seed=0, options=options)
        assert [tool["function"]["name"] for tool in info["tools"]] == expected
        *_, step_info = fresh.step(BOARD)
        assert not step_info["invalid_action"]
        assert "renamed" not in fresh.unwrapped.episode.chat.messages[0]["content"]
