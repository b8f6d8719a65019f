"""Terminal: a tmux session; the agent sends keystrokes and reads the next screen.

An action is a JSON array of ``{"keystrokes": str, "duration": float}`` objects (a single object
is accepted too); ``""`` keystrokes wait; ``[]`` declares the task complete: as in the release,
the world model shows the completion confirmation, and the env ends the episode.
The world model sees the screen on the first turn only, then the history.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld_envs.domains.base import StateDomain
from agentworld_envs.protocol.bounded_json import JSONError, loads
from agentworld_envs.protocol.endings import TASK_COMPLETE
from agentworld_envs.world.termination import Interpretation, simulate

__all__ = ["DOMAIN", "TerminalDomain"]

_MAX_DURATION_S = 600.0


def _duration(item: dict[str, Any]) -> float | None:
    value = item.get("duration", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 <= value <= _MAX_DURATION_S:  # also false for NaN
        return None
    return float(value)


class TerminalDomain(StateDomain):
    """Keystrokes into a simulated terminal."""

    key = "terminal"
    state_turns = "first"
    uses_tags = False
    action_hint = (
        'Send a JSON array of {"keystrokes": "<text>", "duration": <seconds>} objects, e.g. '
        '[{"keystrokes": "ls -la\\n", "duration": 1}]. Send [] when the task is complete.')

    def read_action(self, text: str, state: str) -> Interpretation:
        """Keystroke batches are simulated; ``[]`` completes the task."""
        try:
            data = loads(text)
        except JSONError:
            return self.reject("the action is not a JSON array of keystroke objects", state)
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            return self.reject("the action must be a JSON array", state)
        if not data:
            return simulate("[]", "json", ending=TASK_COMPLETE)
        commands = []
        for item in data:
            if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
                return self.reject('every item needs a string "keystrokes"', state)
            duration = _duration(item)
            if duration is None:
                return self.reject(f'"duration" must be a number of seconds in '
                                   f"[0, {_MAX_DURATION_S:g}]", state)
            commands.append({"keystrokes": item["keystrokes"], "duration": duration})
        return simulate(json.dumps(commands, indent=2, ensure_ascii=False), "json")


DOMAIN = TerminalDomain()
