"""How a tool env's result envelopes (``info["tool_results"]``) answer a turn's tool calls,
and the user message that carries the rest.

The env answers the calls it ran, in order, with envelopes that name the tool; its errors about
the turn itself (a call it could not read, more calls than a turn may hold) name none. Matching
by position over all envelopes would hand each call another call's result.

Example:
    >>> ran = {"tool_name": "lookup", "status": "ok"}
    >>> unreadable = {"tool_name": None, "status": "error"}
    >>> contents, notes = call_answers(2, [unreadable, ran])
    >>> contents[0] == '{"tool_name": "lookup", "status": "ok"}', contents[1]
    (True, '{"status": "skipped"}')
    >>> notes
    ['{"tool_name": null, "status": "error"}']
    >>> tool_results_message(*notes)
    {'role': 'user', 'content': 'Tool results:\\n{"tool_name": null, "status": "error"}'}
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SKIPPED", "call_answers", "tool_results_message"]

SKIPPED = '{"status": "skipped"}'
"""The answer of a call the env did not run."""


def _dumps(envelope: dict[str, Any]) -> str:
    return json.dumps(envelope, ensure_ascii=False, default=str)


def call_answers(calls: int, envelopes: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The content of each of ``calls`` tool messages, and the env's notes about the turn.

    Returns:
        One JSON envelope per call (:data:`SKIPPED` for a call the env did not run), and the
        envelopes that answer no call, as JSON.
    """
    results = [e for e in envelopes if e.get("tool_name") is not None]
    contents = [_dumps(results[i]) if i < len(results) else SKIPPED for i in range(calls)]
    return contents, [_dumps(e) for e in envelopes if e.get("tool_name") is None]


def tool_results_message(*results: str) -> dict[str, str]:
    """The user message that hands the model tool results no ``tool`` message carries (an
    observation, or the env's notes about a turn): ``Tool results:``, then one per line."""
    return {"role": "user", "content": "Tool results:\n" + "\n".join(results)}
