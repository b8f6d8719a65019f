"""Screen-domain actions are checked against their reference's signatures.

Web calls against BrowserGym's (``browsergym/core/action/functions.py``): a call that BrowserGym
answers with an action error (a wrong type, a button or key Playwright does not know, a message
that is not a string) is invalid here, with a one-line reason naming the argument. Android
targets as AndroidWorld's ``JSONAction``: an index or both x and y, never both.
"""

from __future__ import annotations

import pytest

from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.domains import get_domain
from agentworld_envs.domains.android.domain import DOMAIN as ANDROID
from agentworld_envs.domains.base import StateDomain
from agentworld_envs.domains.web.domain import DOMAIN as WEB
from agentworld_envs.registration import make

STATE_DOMAINS = ("terminal", "android", "web", "os")


@pytest.mark.parametrize(("action", "argument"), [
    ("keyboard_press(key=None)", "key must be"),
    ("keyboard_press('enter')", "key must be"),  # Playwright: Unknown key: "enter"
    ("keyboard_press('ctrl+a')", "key must be"),
    ("keyboard_press('a+')", "key must be"),  # Playwright's split leaves an empty key
    ("click('a', 'double')", "button must be one of"),
    ("mouse_up(1, 2, button=None)", "button must be one of"),
    ("click('a', modifiers=['Hyper'])", "modifiers must be"),
    ("click('a', modifiers='Shift')", "modifiers must be"),
    ("click(12)", "bid must be a string"),
    ("hover(['a'])", "bid must be a string"),
    ("mouse_click('a', 2)", "x must be a number"),
    ("scroll(True, 1)", "delta_x must be a number"),
    ("noop('x')", "wait_ms must be a number"),
    ("tab_focus(1.5)", "index must be an integer"),
    ("tab_focus('1')", "index must be an integer"),
    ("fill('a', 5)", "value must be a string"),
    ("fill('a', 'b', 1)", "enable_autocomplete_menu must be"),
    ("select_option('a', ['x', 1])", "options must be"),
    ("goto(5)", "url must be a string"),
    ("keyboard_type(None)", "text must be a string"),
    ("send_msg_to_user(['a'])", "text must be a string"),
    ("send_msg_to_user(42)", "text must be a string"),
    ("report_infeasible(None)", "reason must be a string"),
])
def test_web_arguments_of_the_wrong_type_are_invalid_with_a_reason(action: str,
                                                                   argument: str) -> None:
    read = WEB.interpret(action, None, "page")
    assert (read.kind, read.ending, read.answer) == ("invalid", None, None)
    assert argument in read.error and "\n" not in read.error
    assert read.error.startswith(action.split("(")[0] + ": ")


@pytest.mark.parametrize("action", [
    "click('a51')", "click('b22', button=\"right\")",
    "click('48', button=\"middle\", modifiers=[\"Shift\"])", "click('a', 'left', [])",
    "keyboard_press('Backspace')", "keyboard_press('Control+a')", "keyboard_press('Meta+Shift+t')",
    "keyboard_press('Enter')", "keyboard_press('PageDown')", "keyboard_press('Shift++')",
    "keyboard_press('+')", "keyboard_press('ControlOrMeta+c')", "keyboard_press('#')",
    "scroll(0, 200)", "scroll(-50.2, -100.5)", "mouse_move(65.2, 158.5)",
    "mouse_click(887.2, 68)", "mouse_click(56, 712.56, 'right')", "mouse_dblclick(5, 236)",
    "mouse_down(458, 254.5, 'middle')", "mouse_up(47, 252, 'right')",
    "fill('237', 'example value')", "fill('b534', 'Montre', True)",
    "select_option('a48', 'blue')", "select_option('c48', ['red', 'green', 'blue'])",
    "tab_focus(2)", "tab_focus(-1)", "noop()", "noop(500)", "noop(wait_ms=250.5)",
    "keyboard_type('Hello world!')", "goto('http://www.example.com')", "hover('b8')",
])
def test_browsergyms_own_examples_stay_valid(action: str) -> None:
    assert WEB.interpret(action, None, "page").kind == "simulate"


def test_a_message_that_is_not_a_string_does_not_end_the_web_episode() -> None:
    env = make("web", backend=ScriptedBackend([], keep_requests=True))
    env.reset(seed=0, options={"scenario": "web-wiki-capital"})
    obs, reward, terminated, truncated, info = env.step("send_msg_to_user(['Serra Vane'])")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["invalid_action"] and "send_msg_to_user: text must be a string" in obs
    assert env.step("send_msg_to_user('Serra Vane')")[2] is True


def test_several_web_actions_in_one_message_are_named_as_such() -> None:
    read = WEB.interpret("click('a1')\nclick('a2'); go_back()", None, "page")
    assert read.kind == "invalid" and "3 statements" in read.error


@pytest.mark.parametrize("action", [
    '{"action_type": "click", "index": 3, "x": 5, "y": 6}',
    '{"action_type": "long_press", "index": 0, "x": 1}',
    '{"action_type": "input_text", "text": "hi", "x": 3}',
    '{"action_type": "input_text", "text": "hi", "index": 2, "y": 3}',
])
def test_android_targets_are_an_index_or_both_coordinates(action: str) -> None:
    read = ANDROID.interpret(action, None, "screen")
    assert read.kind == "invalid" and "needs an index or both x and y, not [" in read.error


@pytest.mark.parametrize("action", [
    '{"action_type": "click", "x": 5, "y": 6}', '{"action_type": "input_text", "text": "hi"}',
    '{"action_type": "input_text", "text": "hi", "index": 2}',
    '{"action_type": "double_tap", "index": 0}',
])
def test_android_single_targets_stay_valid(action: str) -> None:
    assert ANDROID.interpret(action, None, "screen").kind == "simulate"


@pytest.mark.parametrize("key", [*STATE_DOMAINS, "swe"])
def test_every_builtin_candidate_action_and_demonstration_is_valid(key: str) -> None:
    domain = get_domain(key)
    for scenario in domain.builtin.values():
        for action in scenario.candidate_actions:
            read = domain.interpret(action, scenario, scenario.initial_state)
            assert read.kind != "invalid", (scenario.id, action, read.error)
        if isinstance(domain, StateDomain):
            for demo in [*domain.catalog.demonstrations, *scenario.demonstrations]:
                assert domain.interpret(demo.action, scenario, demo.state).kind == "simulate"


@pytest.mark.parametrize("code", ["return 5", "break", "await page.click()", "nonlocal x"])
def test_os_code_that_python_cannot_compile_is_invalid(code: str) -> None:
    """They parse (``ast.parse`` took them) but do not compile, so no desktop could run them."""
    read = get_domain("os").interpret(code, None, "screen")
    assert read.kind == "invalid" and "SyntaxError" in read.error


def test_os_code_that_compiles_is_simulated() -> None:
    read = get_domain("os").interpret("def f():\n    return 1\nx = '\\d'", None, "screen")
    assert read.kind == "simulate"
