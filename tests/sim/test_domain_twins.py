"""Review of the domains and their real twins: hostile fields, bounded work, real numbering."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import MAX_CALLS, McpTwin
from floor_tasks.env import FloorEnv
from floor_tasks.task_sets import final_submission


@pytest.mark.parametrize("action", [
    {"action_type": ["click"]}, {"action_type": {"a": 1}},
    {"action_type": "scroll", "direction": ["up"]},
    {"action_type": "swipe", "direction": {"up": 1}},
    {"action_type": "status", "goal_status": ["complete"]},
])
def test_android_rejects_unhashable_action_fields(action: dict) -> None:
    env = gym.make("AgentWorld/Android-v0", backend="scripted")
    env.reset(seed=0)
    obs, _, terminated, _, info = env.step(json.dumps(action))
    assert obs.startswith("Invalid action: ") and not terminated
    assert obs in env.observation_space


def _calendar_twin() -> McpTwin:
    scenario = next(s for s in map(mcp_server_scenario, range(100)) if s.mcp.family == "calendar")
    return McpTwin(scenario)


def _creates(count: int) -> str:
    return json.dumps([{"name": "create_event", "arguments": {
        "title": "x", "date": "2026-01-01", "start": "10:00"}}] * count)


def test_mcp_twin_runs_at_most_max_calls_per_action_so_answers_stay_linear() -> None:
    twin = _calendar_twin()
    assert len(twin.step(_creates(MAX_CALLS)).observation.splitlines()) == MAX_CALLS
    listing = {"name": "list_events", "arguments": {"date": "2026-01-01"}}
    # MAX_CALLS creations, then as many listings of them: before, each listing echoed every
    # event created in the same action, so the answer grew with the action's length squared
    action = json.dumps(json.loads(_creates(MAX_CALLS)) + [listing] * MAX_CALLS)
    refused = json.loads(twin.step(action).observation)
    assert refused["error"]["code"] == "invalid_request"
    assert str(2 * MAX_CALLS) in refused["error"]["message"]
    assert json.loads(twin.step(json.dumps(listing)).observation)["count"] == MAX_CALLS


def _submission_ids(observation: str) -> list[str]:
    return re.findall(r"C1_submit_decision_\d+", observation)


@pytest.mark.parametrize("earlier", [
    ['{"name": 5, "arguments": {}}'],  # a parse error: the real env logs it as a call
    [json.dumps([{"name": "lookup_record", "arguments": {"record_id": "x"}}] * 34)],  # the cap
    ['[{"name": "lookup_record", "arguments": {"record_id": "x"}}, {"name": 5, "arguments": {}}]'],
])
def test_floor_decided_submission_is_numbered_as_the_real_env_numbers_it(
        earlier: list[str]) -> None:
    submit = json.dumps({"name": "submit_decision", "arguments": final_submission("C1", "v0")})
    real = FloorEnv("C1", variant="v0")
    real.reset(seed=0)
    env = gym.make("AgentWorld/Floor-v0", backend="scripted", real_counterpart=False,
                   decided_by="scenario", scenarios=["C1/v0"])
    env.reset(seed=0)
    for action in earlier:
        real.step(action)
        env.step(action)
    expected = _submission_ids(real.step(submit)[0])
    assert expected and _submission_ids(env.step(submit)[0]) == expected
