"""The compact view: what an embedded world model is shown of a simulated episode's chat.

A 135M-parameter model on two CPU cores gains nothing from a domain prompt's fixed prose and
demonstrations, and pays for every token of them on every step. The view keeps what the real
tools know and what the next answer depends on:

* the world: the floor prompt's "What this world holds" notes (the task id, the call-id rule
  and the tools' database, where a record is shown whole only when the current action names
  its id or quotes a search key that indexes it, the others by id), or an MCP chat's World
  Notes (moved from the first user turn, without the fictional-world boilerplate), and the
  tools as one signature line each (``get_item(sku: string*)``: ``*`` marks a required
  argument) where the system prompt lists them as JSON;
* the last ``history`` exchanges, each answer cut to its last call id (``Last call id: ...``,
  from which the call ids continue) where it has one, else to its last line;
* the current user turn, whose Simulation Control lines stay with its action.

Actions written as JSON are shown on one line.

Training (``agentworld wm sft --view compact``) and the embedded backend apply the same view,
so the model sees at inference exactly the layout it was trained on.

Example:
    >>> system = "Intro.\\n\\nWhat this world holds: DB\\n\\n## Output\\nx"
    >>> chat = [{"role": "system", "content": system},
    ...         {"role": "user", "content": "### Turn 1\\n**Action:**\\nA"}]
    >>> [m["content"] for m in compact_messages(chat)]
    ['What this world holds: DB', '### Turn 1\\n**Action:**\\nA']
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld_envs.protocol.bounded_json import JSONError, loads

__all__ = ["VIEWS", "compact_messages", "tool_signatures"]

_WORLD_START = "What this world holds"
_TOOLS_HEADING = "## Tools exposed by the server"
_INSTRUCTION = "**Simulation Instruction:**"
_WORLD_NOTES = "World Notes"
_ACTION = "**Action:**"
_FICTIONAL = "Fictional World"
_CALL_ID = re.compile(r'"call_id": "([^"]*)"')
_RECORDS = "records:"
_RECORD = re.compile(r"^(\S+): \{")
_INDEX_ENTRY = re.compile(r"^(.+?): (\[.*\])$")
_ID = re.compile(r'"([^"]+)"')
_FENCED_JSON = re.compile(r"```json\n(.*?)\n```", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _section(text: str, start: str, end: str = "\n## ") -> str | None:
    """The text from ``start`` to the next ``end`` (or the end), stripped; None without it."""
    at = text.find(start)
    if at < 0:
        return None
    stop = text.find(end, at + len(start))
    return text[at: stop if stop >= 0 else len(text)].strip()


def tool_signatures(tools: Any) -> str | None:
    """One line per tool, ``name(arg: type*, ...) - description``; None if ``tools`` is not a
    list of tool schemas."""
    if not isinstance(tools, list):
        return None
    lines = []
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return None
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or [])
        args = ", ".join(f"{name}: {spec.get('type', 'any') if isinstance(spec, dict) else 'any'}"
                         f"{'*' if name in required else ''}"
                         for name, spec in (parameters.get("properties") or {}).items())
        lines.append(f"{function['name']}({args}) - {function.get('description', '')}".rstrip())
    return "\n".join(lines)


def _tools(system: str) -> str | None:
    section = _section(system, _TOOLS_HEADING)
    if section is None:
        return None
    try:
        signatures = tool_signatures(loads(section[len(_TOOLS_HEADING):].strip()))
    except JSONError:
        signatures = None
    return f"Tools:\n{signatures}" if signatures else section


def _notes_block(user: str) -> str | None:
    """A user turn's Simulation Instruction block (up to its action) if it holds World Notes."""
    block = _section(user, _INSTRUCTION, _ACTION)
    return block if block is not None and _WORLD_NOTES in block else None


def _world_notes(first_user: str) -> str | None:
    """The World Notes of a first user turn, without the fictional-world boilerplate."""
    block = _notes_block(first_user)
    if block is None:
        return None
    notes = block[block.index(_WORLD_NOTES):].splitlines()
    return "\n".join(line for line in notes if not line.startswith(_FICTIONAL)).strip()


def _without_instruction(user: str) -> str:
    """A first user turn without its world notes; its controls and action stay."""
    block = _notes_block(user)
    if block is None:
        return user
    controls = [line for line in block.splitlines() if line.startswith("Control")]
    kept = "\n".join([_INSTRUCTION, *controls]) if controls else ""
    return user.replace(block, kept, 1).replace("\n\n\n", "\n\n")


def _compact_turn(message: dict[str, Any], first: bool) -> dict[str, Any]:
    content = message["content"]
    if message.get("role") == "assistant":
        ids = _CALL_ID.findall(content)
        shown = f"Last call id: {ids[-1]}" if ids else content.rstrip().rsplit("\n", 1)[-1]
        return {**message, "content": shown}
    if first:
        content = _without_instruction(content)
    return {**message, "content": _FENCED_JSON.sub(_one_line, content)}


def _one_line(match: re.Match[str]) -> str:
    """A fenced JSON block on one line; a lone surrogate the JSON escaped stays an escape (as
    a character, UTF-8 and so the model's tokenizer cannot carry it)."""
    try:
        text = json.dumps(loads(match.group(1)), ensure_ascii=False)
    except JSONError:
        return match.group(0)
    return f"```json\n{_SURROGATE.sub(_escape, text)}\n```"


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _names(action: str, record_id: str) -> bool:
    """Whether ``action`` names ``record_id`` whole (``CI-10`` does not name ``CI-1``)."""
    return re.search(rf"(?<![\w-]){re.escape(record_id)}(?![\w-])", action) is not None


def _named_records(world: str, action: str) -> str:
    """The floor database with only the records ``action`` names (directly, or through a
    search key it quotes) shown whole; the others are listed by id."""
    lines = world.split("\n")
    if _RECORDS not in lines:
        return world
    start = lines.index(_RECORDS) + 1
    end = next((k for k in range(start, len(lines)) if not _RECORD.match(lines[k])), len(lines))
    keys = [_RECORD.match(line).group(1) for line in lines[start:end]]
    named = {key for key in keys if _names(action, key)}
    for line in lines[end:]:
        entry = _INDEX_ENTRY.match(line)
        if entry and f'"{entry.group(1)}"' in action:
            named |= set(_ID.findall(entry.group(2)))
    shown = [line for key, line in zip(keys, lines[start:end], strict=True) if key in named]
    others = [key for key in keys if key not in named]
    if others:
        shown.append(f"(not shown: {', '.join(others)})")
    return "\n".join([*lines[:start], *shown, *lines[end:]])


def compact_messages(messages: list[dict[str, Any]], history: int = 1) -> list[dict[str, Any]]:
    """The compact view of a world-model chat (see the module docstring)."""
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    turns = [m for m in messages if m.get("role") != "system"]
    users = [m for m in turns if m.get("role") == "user"]
    floor = _section(system, _WORLD_START, "\n## ")
    if floor is not None and users:
        floor = _named_records(floor, users[-1]["content"])
    world = [part for part in (floor, _tools(system),
                               _world_notes(users[0]["content"]) if users else None) if part]
    kept = turns[-(2 * history + 1):] if history >= 0 else turns
    shown = [_compact_turn(m, first=m is users[0]) for m in kept]
    head = [{"role": "system", "content": "\n\n".join(world) if world else system}]
    return head + shown


VIEWS = {"compact": compact_messages}
"""Views by name, for ``HFBackend(view=...)`` and ``SFTArgs.view``."""
