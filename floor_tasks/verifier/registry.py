"""The check registries: each check is a function registered under the name tasks use."""

from __future__ import annotations

from collections.abc import Callable

CheckFn = Callable[..., tuple[bool, str]]
ANSWER_CHECKS: dict[str, CheckFn] = {}
CHECKS: dict[str, CheckFn] = {}
"""Trajectory and forbidden-behaviour checks; a task lists each under the section it belongs to."""


def register(table: dict[str, CheckFn], name: str) -> Callable[[CheckFn], CheckFn]:
    def add(fn: CheckFn) -> CheckFn:
        table[name] = fn
        return fn
    return add
