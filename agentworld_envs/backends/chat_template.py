"""Chats made ready for a tokenizer's chat template: the named view that rewrites a chat first
(:func:`chat_view`), then tool-call arguments given as JSON text made objects, as chat
templates expect (:func:`template_messages`).

Example:
    >>> call = {"function": {"name": "echo", "arguments": '{"text": "hi"}'}}
    >>> template_messages([{"role": "assistant", "tool_calls": [call]}])[0]["tool_calls"]
    [{'function': {'name': 'echo', 'arguments': {'text': 'hi'}}}]
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["chat_view", "template_messages"]


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy messages for a chat template: tool-call arguments given as JSON text become objects."""
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [_object_arguments(call) for call in calls]}
        out.append(message)
    return out


def _object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    call = copy.deepcopy(call)
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # rendered as the raw text the model wrote
    return call


def chat_view(name: str | None) -> Any:
    """The view named ``name`` (:data:`agentworld_envs.models.compact_view.VIEWS`), or None."""
    if name is None:
        return None
    from agentworld_envs.models.compact_view import VIEWS

    return VIEWS[name]
