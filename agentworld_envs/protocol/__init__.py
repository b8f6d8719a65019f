"""The text protocol shared by every env: text spaces, tool-call parsing and tool schemas."""

from agentworld_envs.protocol.text_space import UnicodeText
from agentworld_envs.protocol.tool_calls import (
    ParsedAction,
    ParseError,
    ToolCall,
    format_tool_call,
    parse_action,
)

__all__ = ["ParseError", "ParsedAction", "ToolCall", "UnicodeText", "format_tool_call",
           "parse_action"]
