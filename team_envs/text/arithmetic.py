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

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, wrap
from team_envs.text.base import Problem, ReasoningTask

__all__ = ["ArithmeticChainTask", "env", "raw_env", "parallel_env"]

_OPS = {"+": ("add", lambda a, b: a + b), "-": ("subtract", lambda a, b: a - b),
        "*": ("multiply by", lambda a, b: a * b)}
_INTEGER = re.compile(r"-?\d[\d,]*")
_LIMIT = 10_000
_MAX_DIGITS = 64
"""Longer numbers are wrong answers, not read (int() refuses thousands of digits; values have
at most 21, operands being int64)."""


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
        self.steps = self.n_agents if steps is None else steps
        if not isinstance(self.steps, int) or not 1 <= self.steps <= 32:
            raise ValueError(f"steps must be an integer from 1 to 32, got {steps!r}")
        if not isinstance(max_operand, int) or max_operand < 2:
            raise ValueError(f"max_operand must be an integer >= 2, got {max_operand!r}")
        self.max_operand = max_operand
        self.split = split

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
        """1 when the answer's first integer is the final value."""
        found, given = _INTEGER.search(answer), None
        if found:
            text = found.group().replace(",", "")
            digits = text.lstrip("-").lstrip("0") or "0"
            if len(digits) <= _MAX_DIGITS:
                given = -int(digits) if text.startswith("-") else int(digits)
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
