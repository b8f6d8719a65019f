"""How an episode ends: one vocabulary for the AgentFloor env and the simulated envs.

The names are AgentFloor's end conditions (``final_answer``, ``submitted``,
``step_budget_exhausted``), plus the endings the simulated domains' own interfaces have: a
terminal, desktop or Android agent says ``task_complete``, a web agent ends with a ``message``
to the user, an Android agent with an ``answer``, any of them may say the task is
``infeasible``. Both envs report the ending as ``info["termination"]``.

Example:
    >>> STEP_BUDGET_EXHAUSTED in COMPLETED, SUBMITTED in COMPLETED
    (False, True)
"""

from __future__ import annotations

__all__ = ["ANSWER", "COMPLETED", "ENDED_OBSERVATION", "FINAL_ANSWER", "INFEASIBLE", "MESSAGE",
           "STEP_BUDGET_EXHAUSTED", "SUBMITTED", "TASK_COMPLETE"]

FINAL_ANSWER = "final_answer"
"""The agent answered in text, calling no tool."""
SUBMITTED = "submitted"
"""A submission tool accepted the agent's answer."""
TASK_COMPLETE = "task_complete"
"""The agent said it has done the task (terminal, desktop, Android)."""
MESSAGE = "message"
"""The agent ended with a message to the user (web)."""
ANSWER = "answer"
"""The agent answered the user (Android)."""
INFEASIBLE = "infeasible"
"""The agent said the task cannot be done."""
STEP_BUDGET_EXHAUSTED = "step_budget_exhausted"
"""The env truncated the episode at its step budget."""

ENDED_OBSERVATION = "The episode has ended; call reset() to start a new one."
"""What a step after the episode's end observes (it changes nothing)."""

COMPLETED = frozenset({FINAL_ANSWER, SUBMITTED, TASK_COMPLETE, MESSAGE, ANSWER})
"""Endings in which the agent says it has done the task."""
