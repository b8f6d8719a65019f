"""The ``Tool results:`` user message is built in one place
(:func:`~agentworld_envs.protocol.tool_results.tool_results_message`), and the floor harness and
the TRL rollout both send it, byte for byte: for an observation, and for the env's notes about a
turn whose tool calls it could not all read."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import gymnasium as gym

from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.protocol.tool_results import call_answers, tool_results_message
from agentworld_envs.trl.rollout import feedback_messages, turn_environment_class
from floor_tasks.harness.runner import run_episode

GOOD = '<tool_call>{"name": "lookup_record", "arguments": {"record_id": "P104"}}</tool_call>'
GOOD_AND_TWO_BROKEN = (
    GOOD + '\n<tool_call>{"name": "lookup_record", "arguments": {"record_id": </tool_call>\n'
    '<tool_call>{"name": "get_attribute" </tool_call>')
FINAL = "The status of P104 is active."


def _direct(action: str) -> tuple[str, dict[str, Any]]:
    """The observation and info of ``action`` as A1's first step."""
    env = gym.make("AgentFloor/A1-v0")
    env.reset(options={"variant": "v0"})
    observation, *_, info = env.step(action)
    env.close()
    return observation, info


def _first_user_after_assistant(messages: list[dict[str, Any]]) -> dict[str, Any]:
    first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return next(m for m in messages[first:] if m["role"] == "user")


class TextOnly(Backend):
    """A server whose replies carry no parsed tool calls: the env reads the text."""

    name = "text-only"

    def __init__(self, turns: Sequence[str]) -> None:
        self.turns = turns

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion(text=self.turns[sum(m["role"] == "assistant" for m in r.messages)])
                for r in requests]


def test_the_message_is_tool_results_then_one_result_per_line() -> None:
    assert tool_results_message("a", "b") == {"role": "user", "content": "Tool results:\na\nb"}
    assert tool_results_message('{"x": "é"}') == {"role": "user",
                                                   "content": 'Tool results:\n{"x": "é"}'}


def test_the_harness_and_the_rollout_send_an_observation_as_the_same_message() -> None:
    observation, _ = _direct(GOOD)
    assert observation
    expected = tool_results_message(observation)
    assert expected["content"] == f"Tool results:\n{observation}"

    record = run_episode("A1", TextOnly([GOOD, FINAL]))
    assert _first_user_after_assistant(record["messages"]) == expected

    session = turn_environment_class("AgentFloor/A1-v0")()
    session.reset(variant="v0")
    session._step(GOOD)
    assert feedback_messages(Completion(text=GOOD), session, observation) == [expected]
    # an env that reports no tool results gets the observation alone
    no_tools: Any = SimpleNamespace(last_info={})
    assert feedback_messages(Completion(text=GOOD), no_tools, observation) == [
        {"role": "user", "content": observation}]


def test_the_harness_and_the_rollout_send_the_notes_as_the_same_message() -> None:
    _, info = _direct(GOOD_AND_TWO_BROKEN)
    _, notes = call_answers(3, info["tool_results"])
    assert len(notes) == 2
    expected = tool_results_message(*notes)
    assert expected["content"] == "Tool results:\n" + "\n".join(notes)

    record = run_episode("A1", lambda messages, tools: [GOOD_AND_TWO_BROKEN, FINAL][
        sum(m["role"] == "assistant" for m in messages)])
    assert _first_user_after_assistant(record["messages"]) == expected

    session = turn_environment_class("AgentFloor/A1-v0")()
    session.reset(variant="v0")
    session._step(GOOD_AND_TWO_BROKEN)
    completion = Completion(text=GOOD_AND_TWO_BROKEN,
                            tool_calls=text_tool_calls(GOOD_AND_TWO_BROKEN))
    assert feedback_messages(completion, session, "")[-1] == expected
