"""What travels over the wire: OpenEnv's action, observation and state, for a text env.

An action is one assistant turn as text (``{"message": "..."}``), exactly what ``env.step``
takes, or one of OpenEnv's MCP-style tool actions: ``{"type": "list_tools"}`` lists the
episode's tools, ``{"type": "call_tool", "tool_name": ..., "arguments": {...}}`` is played as
a turn holding that one tool call.
"""

from __future__ import annotations

from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["EpisodeState", "TurnAction", "TurnObservation"]


class TurnAction(Action):
    """One assistant turn (``message``), or an MCP-style ``list_tools`` / ``call_tool``."""

    type: Literal["message", "list_tools", "call_tool"] = Field(
        default="message", description="message (default), list_tools or call_tool")
    message: str | None = Field(
        default=None, description="The assistant turn: tool calls (JSON or <tool_call> tags) "
                                  "or a final answer")
    tool_name: str | None = Field(default=None, description="call_tool: the tool")
    arguments: dict[str, Any] = Field(default_factory=dict,
                                      description="call_tool: the tool's arguments")

    @model_validator(mode="after")
    def _fields_of_type(self) -> TurnAction:
        # PydanticCustomError, not ValueError: OpenEnv sends the errors back as JSON, and a
        # ValueError in an error's context cannot be serialised (the session would end).
        if self.type == "message" and self.message is None:
            raise PydanticCustomError(
                "missing_message", 'a "message" action needs the field "message" (a string)')
        if self.type == "call_tool" and not self.tool_name:
            raise PydanticCustomError("missing_tool_name", 'a "call_tool" action needs '
                                                           '"tool_name"')
        # a field of another type would be dropped unread (as OpenEnv's own list_tools and
        # call_tool actions refuse it); its default (null, {}) is no field
        if self.type != "message" and self.message is not None:
            raise PydanticCustomError("message_not_read", 'a "{type}" action takes no '
                                      '"message" (a turn of text is a "message" action)',
                                      {"type": self.type})
        if self.type != "call_tool" and (self.tool_name is not None or self.arguments):
            raise PydanticCustomError("tool_call_not_read", 'a "{type}" action takes no '
                                      '"tool_name" or "arguments" (a tool call is a '
                                      '"call_tool" action, or a message holding it)',
                                      {"type": self.type})
        return self


class TurnObservation(Observation):
    """The env's observation text; ``done`` and ``reward`` as OpenEnv has them.

    ``metadata`` keeps Gymnasium's split (``terminated``, ``truncated``) and the env's
    ``info`` (hidden fields withheld, as in process).
    """

    text: str = Field(default="", description="The prompt after reset; the observation after "
                                              "a step")
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="The episode's tools (name, description, JSON schema), at "
                                  "reset and for list_tools")


class EpisodeState(State):
    """Where the session's episode stands."""

    env_id: str = Field(default="", description="The Gymnasium id being played")
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    total_reward: float = 0.0
