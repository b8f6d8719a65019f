"""Web: a browser page as an accessibility tree with ``bid`` element ids (BrowserGym actions).

An action is one call from BrowserGym's action set, written as Python, e.g. ``click('a51')`` or
``fill('b12', "Velmora")``. It is read with :mod:`ast` and never evaluated: only literal
arguments are accepted, of the types BrowserGym's signatures name (a ``bid`` is a string, a
coordinate a number, ``button`` one of left/middle/right, a key one Playwright knows): a call that
BrowserGym would answer with an action error is invalid here. ``send_msg_to_user`` and
``report_infeasible`` end the episode.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Callable
from typing import Any

from agentworld_envs.domains.base import StateDomain
from agentworld_envs.protocol.bounded_json import MAX_DEPTH, MAX_INT_DIGITS, is_bounded
from agentworld_envs.protocol.endings import INFEASIBLE, MESSAGE
from agentworld_envs.protocol.shown import shown
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

_BUTTONS = ("left", "middle", "right")
_MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")
_KEYS = frozenset([
    *("Escape Backquote Minus Equal Backslash Backspace Tab BracketLeft BracketRight CapsLock "
      "Semicolon Quote Enter ShiftLeft ShiftRight ControlLeft ControlRight MetaLeft MetaRight "
      "AltLeft AltRight AltGraph Space ContextMenu Comma Period Slash PrintScreen ScrollLock Pause "
      "PageUp PageDown Insert Delete Home End ArrowLeft ArrowUp ArrowRight ArrowDown "
      "AudioVolumeMute AudioVolumeDown AudioVolumeUp MediaTrackNext MediaTrackPrevious "
      "MediaPlayPause NumLock NumpadDivide NumpadMultiply NumpadSubtract NumpadAdd NumpadDecimal "
      "NumpadEnter Shift Control Alt Meta ControlOrMeta").split(),
    *(f"F{i}" for i in range(1, 13)), *(f"Digit{i}" for i in range(10)),
    *(f"Numpad{i}" for i in range(10)), *(f"Key{c}" for c in string.ascii_uppercase),
    *map(chr, range(32, 127)), "\n", "\r"])
"""The key names of Playwright's US keyboard layout (case-sensitive), as ``keyboard_press`` takes
them: codes, modifier aliases and the printable ASCII characters the layout types."""


def _key_combination(value: Any) -> bool:
    """Whether Playwright presses ``value``: keys joined by ``+`` (``Control+a``, ``Shift++``)."""
    if not isinstance(value, str):
        return False
    keys, start = [], 0
    for i, char in enumerate(value):  # Playwright's split: a "+" that starts a key is the key
        if char == "+" and i > start:
            keys.append(value[start:i])
            start = i + 1
    keys.append(value[start:])
    return all(key in _KEYS for key in keys)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _strings(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value))


_ARGUMENT_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **dict.fromkeys(("bid", "value", "text", "url", "reason"), (_string, "a string")),
    **dict.fromkeys(("x", "y", "delta_x", "delta_y", "wait_ms"), (_number, "a number")),
    "index": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "enable_autocomplete_menu": (lambda v: isinstance(v, bool), "True or False"),
    "button": (lambda v: isinstance(v, str) and v in _BUTTONS, f"one of {list(_BUTTONS)}"),
    "modifiers": (lambda v: isinstance(v, list) and all(
        isinstance(m, str) and m in _MODIFIERS for m in v), f"a list of {list(_MODIFIERS)}"),
    "key": (_key_combination, "a Playwright key name or combination, e.g. 'Enter', "
                              "'ArrowDown', 'Control+a' (names are case-sensitive)"),
    "options": (_strings, "a string or a list of strings"),
}
"""How each parameter's value is checked (the same name has the same type in every action),
and what it must be."""


def _argument_problem(name: str, arguments: dict[str, Any]) -> str | None:
    for param, value in arguments.items():
        accepts, expected = _ARGUMENT_TYPES[param]
        if not accepts(value):
            return f"{name}: {param} must be {expected}, not {shown(value)}"
    return None


_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def _not_one_expression(text: str) -> str:
    try:
        statements = len(ast.parse(text).body)
    except _UNPARSABLE:
        statements = 0
    if statements > 1:  # BrowserGym without multiaction refuses these too
        return f"the action is {statements} statements, not one Python call: one action per turn"
    return "the action is not one Python call expression"


def read_call(text: str) -> tuple[str, dict[str, Any]] | str:
    """Read one action call into ``(name, arguments)``, or return what is wrong with it.

    Example:
        >>> read_call("fill('b12', 'Velmora')")
        ('fill', {'bid': 'b12', 'value': 'Velmora'})
        >>> read_call("__import__('os').system('ls')")
        'the action must be a call to one of the browser actions by name'
        >>> read_call("click('a51', 'double')")
        "click: button must be one of ['left', 'middle', 'right'], not 'double'"
    """
    try:
        tree = ast.parse(text, mode="eval")
    except _UNPARSABLE:
        return _not_one_expression(text)
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
    arguments = {p: values[p] for p in params if p in values}
    return _argument_problem(name, arguments) or (name, arguments)


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
            return finish(MESSAGE, state, answer=arguments["text"])
        if name == "report_infeasible":
            return finish(INFEASIBLE, state, answer=arguments["reason"])
        return simulate(text, "python")  # verbatim, as the agent wrote it


DOMAIN = WebDomain()
