"""Arithmetic chains (``team_envs/arithmetic_chain-v0``): apply a sequence of steps to a number.

With ``split=True`` (the default) step ``k`` is told privately to agent ``k mod n``, so the team
only gets the answer if every agent applies its own step to the running value it hears.

Example:
    >>> from team_envs.text import arithmetic
    >>> env = arithmetic.env(n_agents=2)
    >>> env.reset(seed=3)
    >>> print(env.observe("agent_0")["text"].splitlines()[0])
    Start from 17 and apply 2 steps in order. What is the final value?
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import (
    SharedContextEnv,
    SharedContextParallelEnv,
    check_flag,
    check_int,
    wrap,
)
from team_envs.text.base import Problem, ReasoningTask

__all__ = ["ArithmeticChainTask", "env", "raw_env", "parallel_env"]

_OPS = {"+": ("add", lambda a, b: a + b), "-": ("subtract", lambda a, b: a - b),
        "*": ("multiply by", lambda a, b: a * b)}
# The first number: a sign (ASCII or U+2212 minus), digits (in groups of three if commas are
# used) and decimals, never part of a longer number such as 17.5.3, 1,7 or 17/2.
_NUMBER = re.compile(r"(?<!\d)(?<!\d[.,/])([-\u2212]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
                     r"(?![.,/]?\d)")
_LIMIT = 10_000
_MAX_DIGITS = 64
"""Longer numbers are wrong answers, not read (int() refuses thousands of digits; values have
at most 21, operands being int64)."""


def _read_integer(answer: str) -> int | None:
    """The answer's first number if it is an integer (``17.0`` is, ``17.5`` is not) of at
    most ``_MAX_DIGITS`` digits; None otherwise."""
    found = _NUMBER.search(answer)
    if not found:
        return None
    sign, whole, decimals = found.groups()
    digits = whole.replace(",", "").lstrip("0") or "0"
    if (decimals or "").strip("0") or len(digits) > _MAX_DIGITS:
        return None
    return -int(digits) if sign else int(digits)


class ArithmeticChainTask(ReasoningTask):
    """Arithmetic chains.

    Args:
        steps: Steps per problem (the team size by default).
        max_operand: Largest operand (at least 2).
        split: Give each step privately to one agent instead of stating all of them.
        **kwargs: See :class:`~team_envs.text.base.TextTeamTask`.
    """

    family = "arithmetic_chain"
    answer_format = "ANSWER: <integer>"

    def __init__(self, steps: int | None = None, max_operand: int = 9, split: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps = check_int("steps", self.n_agents if steps is None else steps, 1, 32)
        self.max_operand = check_int("max_operand", max_operand, 2)
        self.split = check_flag("split", split)

    def generate(self, rng: np.random.Generator) -> Problem:
        """A start value and steps; products that would pass 10,000 become additions."""
        value = start = int(rng.integers(1, 21))
        steps = []
        for _ in range(self.steps):
            op = ("+", "-", "*")[int(rng.integers(3))]
            operand = int(rng.integers(2, self.max_operand + 1))
            if op == "*" and abs(value * operand) > _LIMIT:
                op = "+"
            value = _OPS[op][1](value, operand)
            steps.append(f"{_OPS[op][0]} {operand}")
        statement = f"Start from {start} and apply {self.steps} steps in order. " \
                    "What is the final value?"
        briefs = [""] * self.n_agents
        if self.split:
            for k, step in enumerate(steps):
                owner = k % self.n_agents
                briefs[owner] = "; ".join(filter(None, [briefs[owner], f"step {k + 1}: {step}"]))
        else:
            statement += " Steps: " + "; ".join(
                f"{k + 1}. {step}" for k, step in enumerate(steps)) + "."
        return Problem(statement, tuple(briefs), value, {"start": start, "steps": steps})

    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """1 when the answer's first number is the final value."""
        given = _read_integer(answer)
        return float(given == problem.answer), {"expected": problem.answer, "given": given}


class raw_env(SharedContextEnv):
    """Arithmetic chains as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "arithmetic_chain_v0"}
    task_type = ArithmeticChainTask


def env(**kwargs: Any) -> AECEnv:
    """Arithmetic chains as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """Arithmetic chains in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
