"""OS: a desktop (OSWorld) shown as an accessibility tree; the agent acts with Python code.

The action space is open: ``pyautogui`` calls, app helper calls, shell commands through
``subprocess``. The code is only checked for syntax with :mod:`ast` and shown to the world
model: it is never executed. ``DONE`` ends the episode as complete, ``FAIL`` as infeasible;
``WAIT`` lets time pass.
"""

from __future__ import annotations

import warnings

from agentworld_envs.domains.base import StateDomain
from agentworld_envs.protocol.endings import INFEASIBLE, TASK_COMPLETE
from agentworld_envs.world.termination import Interpretation, finish, simulate

__all__ = ["DOMAIN", "DesktopDomain"]


class DesktopDomain(StateDomain):
    """Python actions on a simulated desktop."""

    key = "os"
    language = "python"
    task_turns = "every"
    action_hint = (
        "Send Python code that drives the desktop, e.g. pyautogui.click(640, 360) or "
        "pyautogui.hotkey('ctrl', 's'). Send DONE when the task is complete, FAIL if it cannot "
        "be done, WAIT to let time pass.")

    def read_action(self, text: str, state: str) -> Interpretation:
        """Code is simulated (never run); DONE and FAIL end the episode."""
        keyword = text.strip().upper()
        if keyword == "DONE":
            return finish(TASK_COMPLETE, state)
        if keyword == "FAIL":
            return finish(INFEASIBLE, state)
        if keyword == "WAIT":
            return simulate("WAIT", "python")
        if not text.strip():
            return self.reject("the action is empty", state)
        try:  # compiled, never run: also refuses what only compiling finds (`return` at top)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an invalid escape's SyntaxWarning
                compile(text, "<action>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return self.reject(f"the code does not parse: {type(exc).__name__}", state)
        return simulate(text, "python")


DOMAIN = DesktopDomain()
