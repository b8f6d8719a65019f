"""Countdown (``team_envs/countdown-v0``): reach a target from given numbers with + - * /.

Every problem is made by combining a random subset of the numbers, so a solution always exists.
The verifier parses the answer with :mod:`ast` (never ``eval``), checks that each number is used
at most as often as it was given, and evaluates exactly with fractions. With ``split=True`` the
numbers are dealt out privately among the agents.
"""

from __future__ import annotations

import ast
import operator
from collections import Counter
from fractions import Fraction
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

__all__ = ["CountdownTask", "evaluate_expression", "env", "raw_env", "parallel_env"]

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}
_MAX_EXPRESSION = 200
_OPERATOR_SIGNS = str.maketrans({"×": "*", "÷": "/", "−": "-"})
"""Typeset operators read as Python's."""
_ATTEMPTS = 64


def _combine(a: Fraction, b: Fraction, op: str) -> Fraction | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b if a > b else None
    if op == "*":
        return a * b
    return a / b if b and (a / b).denominator == 1 else None


def evaluate_expression(expression: str) -> tuple[Fraction | None, list[int], str]:
    """Evaluate an arithmetic expression of integers with + - * / (or × ÷ −) and parentheses.

    Returns:
        The exact value (None if it cannot be read or divides by zero), the integers it uses and
        an error message ("" when fine).
    """
    if len(expression) > _MAX_EXPRESSION:
        return None, [], "expression too long"
    try:
        tree = ast.parse(expression.translate(_OPERATOR_SIGNS).strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, [], "not an arithmetic expression"
    used: list[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
            used.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"unsupported element {type(node).__name__}")

    try:
        return value(tree.body), used, ""
    except ZeroDivisionError:
        return None, used, "division by zero"
    except (ValueError, RecursionError) as exc:
        return None, used, str(exc) or "expression too deep"


class CountdownTask(ReasoningTask):
    """Countdown puzzles.

    Args:
        numbers: How many numbers are given, 2 to 6.
        max_number: The numbers are drawn from 1 to this.
        split: Deal the numbers out privately among the agents.
        **kwargs: See :class:`~team_envs.text.base.TextTeamTask`.
    """

    family = "countdown"
    answer_format = "ANSWER: <expression>"

    def __init__(self, numbers: int = 4, max_number: int = 10, split: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.numbers = check_int("numbers", numbers, 2, 6)
        self.max_number = check_int("max_number", max_number, 2, 100)
        self.split = check_flag("split", split)

    def _expression(self, rng: np.random.Generator, numbers: list[int]) -> tuple[Fraction, str]:
        """Combine a random subset of ``numbers`` pairwise with random operations."""
        size = int(rng.integers(2, len(numbers) + 1))
        items = [(Fraction(numbers[i]), str(numbers[i]))
                 for i in rng.permutation(len(numbers))[:size]]
        while len(items) > 1:
            i, j = (int(k) for k in rng.permutation(len(items))[:2])
            (a, a_text), (b, b_text) = items[i], items[j]
            op = "+-*/"[int(rng.integers(4))]
            result = _combine(a, b, op)
            if result is None:
                op, result = "+", a + b
            items = [item for k, item in enumerate(items) if k not in (i, j)]
            items.append((result, f"({a_text} {op} {b_text})"))
        value, text = items[0]
        return value, text[1:-1] if text.startswith("(") else text

    def generate(self, rng: np.random.Generator) -> Problem:
        """Numbers and a target from 10 to 999 that is not one of them."""
        numbers = [int(v) for v in rng.integers(1, self.max_number + 1, size=self.numbers)]
        for _ in range(_ATTEMPTS):
            target, solution = self._expression(rng, numbers)
            if 10 <= target <= 999 and target not in numbers:
                break
        else:
            target, solution = Fraction(sum(numbers)), " + ".join(map(str, numbers))
        shown = " ".join(map(str, numbers))
        briefs = [""] * self.n_agents
        if self.split:
            for k, number in enumerate(numbers):
                owner = k % self.n_agents
                briefs[owner] = " ".join(filter(None, [briefs[owner], str(number)]))
            briefs = [f"you hold the numbers {b}" if b else "" for b in briefs]
            statement = (f"Your team holds {len(numbers)} numbers between them. Use each at "
                         f"most once with + - * / and parentheses to make {target}.")
        else:
            statement = (f"Use the numbers {shown}, each at most once, with + - * / and "
                         f"parentheses to make {target}.")
        return Problem(statement, tuple(briefs), int(target),
                       {"numbers": numbers, "solution": solution})

    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """1 when the expression (before any ``=``; a closing full stop is not part of it) uses
        only the given numbers and equals the target."""
        expression = answer.partition("=")[0].strip().removesuffix(".")
        value, used, error = evaluate_expression(expression)
        overused = Counter(used) - Counter(problem.details["numbers"])
        if not error and overused:
            error = f"uses numbers not given: {sorted(overused.elements())}"
        ok = not error and value == problem.answer
        return float(ok), {"expected": problem.answer,
                           "value": None if value is None else str(value), "error": error}


class raw_env(SharedContextEnv):
    """Countdown as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "countdown_v0"}
    task_type = CountdownTask


def env(**kwargs: Any) -> AECEnv:
    """Countdown as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """Countdown in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
