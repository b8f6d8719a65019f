"""Android: a phone screen as a UI element list; the agent performs one UI action per step.

Actions follow AndroidWorld's JSON form, e.g. ``{"action_type": "click", "index": 4}``. A
``status`` action (``complete`` or ``infeasible``) or an ``answer`` action ends the episode.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld_envs.domains.base import StateDomain
from agentworld_envs.protocol.bounded_json import JSONError, loads
from agentworld_envs.protocol.endings import ANSWER, INFEASIBLE, TASK_COMPLETE
from agentworld_envs.world.termination import Interpretation, finish, simulate

__all__ = ["ACTIONS", "DOMAIN", "AndroidDomain"]

_TARGET = ("index", "x", "y")
_TAPS = ("click", "double_tap", "long_press")
ACTIONS: dict[str, dict[str, Any]] = {
    "click": {"optional": _TARGET},
    "double_tap": {"optional": _TARGET},
    "long_press": {"optional": _TARGET},
    "input_text": {"required": ("text",), "optional": _TARGET},
    "scroll": {"required": ("direction",), "optional": ("index",)},
    "swipe": {"required": ("direction",), "optional": ()},
    "navigate_home": {},
    "navigate_back": {},
    "keyboard_enter": {},
    "open_app": {"required": ("app_name",)},
    "wait": {},
    "status": {"required": ("goal_status",)},
    "answer": {"required": ("text",)},
}
"""Action types with their required and optional fields."""
_DIRECTIONS = {"up", "down", "left", "right"}
_STATUSES = {"complete", "infeasible"}
_CHOICES = {"direction": _DIRECTIONS, "goal_status": _STATUSES}


def _field_problem(name: str, value: Any) -> str | None:
    if name in ("index", "x", "y"):
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else f"{name} must be a non-negative integer"
    if name in _CHOICES:
        ok = isinstance(value, str) and value in _CHOICES[name]
        return None if ok else f"{name} must be one of {sorted(_CHOICES[name])}"
    return None if isinstance(value, str) else f"{name} must be a string"


def _problem(action: dict[str, Any]) -> str | None:
    kind = action.get("action_type")
    if not isinstance(kind, str) or kind not in ACTIONS:
        return f"action_type must be one of {sorted(ACTIONS)}"
    spec = ACTIONS[kind]
    required, optional = spec.get("required", ()), spec.get("optional", ())
    fields = set(action) - {"action_type"}
    missing = [f for f in required if f not in fields]
    extra = sorted(fields - set(required) - set(optional))
    if missing or extra:
        return f"{kind} takes {list(required) + list(optional) or 'no fields'}" + (
            f"; missing {missing}" if missing else "") + (f"; unexpected {extra}" if extra else "")
    target = [f for f in _TARGET if f in fields]
    if target not in (["index"], ["x", "y"]) and (target or kind in _TAPS):
        return f"{kind} needs an index or both x and y" + (f", not {target}" if target else "")
    for name in sorted(fields):
        problem = _field_problem(name, action[name])
        if problem:
            return problem
    return None


class AndroidDomain(StateDomain):
    """UI actions on a simulated Android screen."""

    key = "android"
    task_turns = "first"
    action_hint = (
        'Send one JSON action, e.g. {"action_type": "click", "index": 3}, '
        '{"action_type": "input_text", "text": "hello", "index": 5}, '
        '{"action_type": "scroll", "direction": "down"}, {"action_type": "navigate_back"}, '
        '{"action_type": "open_app", "app_name": "Settings"}. End with '
        '{"action_type": "answer", "text": "..."} or '
        '{"action_type": "status", "goal_status": "complete" | "infeasible"}.')

    def read_action(self, text: str, state: str) -> Interpretation:
        """One validated UI action; ``status`` and ``answer`` end the episode."""
        try:
            action = loads(text)
        except JSONError:
            return self.reject("the action is not a JSON object", state)
        if not isinstance(action, dict):
            return self.reject("the action must be one JSON object", state)
        problem = _problem(action)
        if problem:
            return self.reject(problem, state)
        if action["action_type"] == "status":
            ending = TASK_COMPLETE if action["goal_status"] == "complete" else INFEASIBLE
            return finish(ending, state)
        if action["action_type"] == "answer":
            return finish(ANSWER, state, answer=action["text"])
        return simulate(json.dumps(action, indent=2, ensure_ascii=False), "json")


DOMAIN = AndroidDomain()
