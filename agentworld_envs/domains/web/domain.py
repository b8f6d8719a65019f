"""Web: a browser page as an accessibility tree with ``bid`` element ids (BrowserGym actions).

An action is one call from BrowserGym's action set, written as Python, e.g. ``click('a51')`` or
``fill('b12', "Velmora")``. It is read with :mod:`ast` and never evaluated: only literal
arguments are accepted. ``send_msg_to_user`` and ``report_infeasible`` end the episode.
"""

from __future__ import annotations

import ast
from typing import Any

from agentworld_envs.domains.base import StateDomain
from agentworld_envs.protocol.bounded_json import MAX_DEPTH, MAX_INT_DIGITS, is_bounded
from agentworld_envs.protocol.endings import INFEASIBLE, MESSAGE
from agentworld_envs.world.termination import Interpretation, finish, simulate

__all__ = ["ACTIONS", "DOMAIN", "WebDomain", "read_call"]

ACTIONS: dict[str, tuple[tuple[str, ...], int]] = {
    "noop": (("wait_ms",), 0),
    "mouse_move": (("x", "y"), 2),
    "mouse_click": (("x", "y", "button"), 2),
    "mouse_dblclick": (("x", "y", "button"), 2),
    "mouse_down": (("x", "y", "button"), 2),
    "mouse_up": (("x", "y", "button"), 2),
    "scroll": (("delta_x", "delta_y"), 2),
    "click": (("bid", "button", "modifiers"), 1),
    "keyboard_press": (("key",), 1),
    "keyboard_type": (("text",), 1),
    "fill": (("bid", "value", "enable_autocomplete_menu"), 2),
    "hover": (("bid",), 1),
    "tab_focus": (("index",), 1),
    "new_tab": ((), 0),
    "go_back": ((), 0),
    "go_forward": ((), 0),
    "goto": (("url",), 1),
    "tab_close": ((), 0),
    "select_option": (("bid", "options"), 2),
    "send_msg_to_user": (("text",), 1),
    "report_infeasible": (("reason",), 1),
}
"""BrowserGym's 21 actions: parameter names, and how many are required."""


def read_call(text: str) -> tuple[str, dict[str, Any]] | str:
    """Read one action call into ``(name, arguments)``, or return what is wrong with it.

    Example:
        >>> read_call("fill('b12', 'Velmora')")
        ('fill', {'bid': 'b12', 'value': 'Velmora'})
        >>> read_call("__import__('os').system('ls')")
        'the action must be a call to one of the browser actions by name'
    """
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "the action is not one Python call expression"
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return "the action must be a call to one of the browser actions by name"
    name = call.func.id
    if name not in ACTIONS:
        return f"unknown action {name!r}; the actions are {sorted(ACTIONS)}"
    params, required = ACTIONS[name]
    if len(call.args) > len(params) or any(k.arg is None for k in call.keywords):
        return f"{name} takes at most {len(params)} arguments {list(params)}"
    try:
        values = {p: ast.literal_eval(a) for p, a in zip(params, call.args, strict=False)}
        for keyword in call.keywords:
            if keyword.arg not in params or keyword.arg in values:
                return f"{name} has no argument {keyword.arg!r} (or it is given twice)"
            values[keyword.arg] = ast.literal_eval(keyword.value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return "arguments must be literals (strings, numbers, lists)"
    if not is_bounded(values):
        return (f"numbers must be finite with at most {MAX_INT_DIGITS} digits, nested at most "
                f"{MAX_DEPTH} levels deep")
    missing = [p for p in params[:required] if p not in values]
    if missing:
        return f"{name} needs {missing}"
    return name, {p: values[p] for p in params if p in values}


class WebDomain(StateDomain):
    """BrowserGym actions on a simulated web page."""

    key = "web"
    language = "python"
    task_turns = "first"
    action_hint = (
        "Send one browser action as a Python call, e.g. click('a51'), fill('b12', 'text'), "
        "scroll(0, 300), goto('http://...'), go_back(). End with send_msg_to_user('answer') "
        "or report_infeasible('reason').")

    def read_action(self, text: str, state: str) -> Interpretation:
        """One literal-argument browser action; two of them end the episode."""
        read = read_call(text)
        if isinstance(read, str):
            return self.reject(read, state)
        name, arguments = read
        if name == "send_msg_to_user":
            return finish(MESSAGE, state, answer=str(arguments["text"]))
        if name == "report_infeasible":
            return finish(INFEASIBLE, state, answer=str(arguments["reason"]))
        return simulate(text, "python")  # verbatim, as the agent wrote it


DOMAIN = WebDomain()
