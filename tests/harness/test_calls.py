"""The harness plays what the model wrote: broken calls reach the env, results reach their calls."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.backends.replies import completion_from_reply
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.rescore import rescore_record
from floor_tasks.harness.runner import run_episode

GOOD_AND_TWO_BROKEN = (
    '<tool_call>{"name": "lookup_record", "arguments": {"record_id": "P104"}}</tool_call>\n'
    '<tool_call>{"name": "lookup_record", "arguments": {"record_id": </tool_call>\n'
    '<tool_call>{"name": "get_attribute" </tool_call>')
FINAL = "The status of P104 is active."


def _turn(messages: list[dict[str, Any]], turns: Sequence[str]) -> str:
    return turns[sum(m["role"] == "assistant" for m in messages)]


class TextServer(Backend):
    """A chat server that writes its calls into the text (read as the OpenAI backend does)."""

    name = "text-server"

    def __init__(self, turns: Sequence[str]) -> None:
        self.turns = turns

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [completion_from_reply(
            {"choices": [{"message": {"content": _turn(r.messages, self.turns)}}]}, 0.0)
            for r in requests]


def _direct(task_id: str, actions: Sequence[str]) -> tuple[dict[str, Any], list[bool]]:
    env = gym.make(f"AgentFloor/{task_id}-v0")
    env.reset(seed=0, options={"variant": "v0"})
    for action in actions:
        *_, info = env.step(action)
    return info["verdict"], [c["malformed"] for c in env.unwrapped.trace.calls]


@pytest.mark.parametrize("agent", [
    lambda turns: (lambda messages, tools: _turn(messages, turns)),
    TextServer,
], ids=["callable", "text-server"])
def test_broken_calls_beside_a_good_one_count_as_through_the_env(agent: Any) -> None:
    turns = [GOOD_AND_TWO_BROKEN, FINAL]
    verdict, malformed = _direct("A1", turns)
    assert not verdict["passed"] and malformed == [True, True, False]

    record = run_episode("A1", agent(turns))
    assert [c["malformed"] for c in record["call_log"]] == malformed
    assert record["verdict"] == verdict
    assert rescore_record(RunRecord.from_json(record)).verdict.model_dump() == verdict

    # The good call's message holds its result; the parse errors follow as a note.
    messages = record["messages"]
    tool = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    assert json.loads(messages[tool]["content"])["result"]["record_id"] == "P104"
    note = messages[tool + 1]
    assert note["role"] == "user" and note["content"].count('"parse_error"') == 2


def test_each_of_33_calls_gets_its_own_result() -> None:
    ids = [f"P{100 + i}" for i in range(33)]
    calls = [{"name": "lookup_record", "arguments": {"record_id": i}} for i in ids]
    turns = [json.dumps(calls), FINAL]
    record = run_episode("A1", lambda messages, tools: _turn(messages, turns))

    messages = record["messages"]
    tool = [m for m in messages if m["role"] == "tool"]
    assert len(tool) == 33
    for record_id, message in zip(ids[:32], tool[:32], strict=True):
        envelope = json.loads(message["content"])
        assert envelope["tool_name"] == "lookup_record"
        assert record_id in json.dumps(envelope), (record_id, envelope)
    assert json.loads(tool[32]["content"]) == {"status": "skipped"}
    note = messages[messages.index(tool[32]) + 1]
    assert note["role"] == "user" and "33 calls in one turn" in note["content"]


def test_the_trl_rollout_feeds_each_call_its_own_result_and_the_broken_ones_after() -> None:
    from agentworld_envs.backends.replies import text_tool_calls
    from agentworld_envs.trl.rollout import feedback_messages, turn_environment_class

    session = turn_environment_class("AgentFloor/A1-v0")()
    session.reset(options={"variant": "v0"})
    completion = Completion(text=GOOD_AND_TWO_BROKEN, tool_calls=text_tool_calls(
        GOOD_AND_TWO_BROKEN))
    session._step(completion.to_action())
    tool, note = feedback_messages(completion, session, "")
    assert tool["role"] == "tool" and json.loads(tool["content"])["status"] == "ok"
    assert '"P104"' in tool["content"]
    assert note["role"] == "user" and note["content"].count("\"type\": \"parse_error\"") == 2
