"""Integer settings, read one way everywhere: a numpy integer is an integer, a bool is not.

Example:
    >>> is_integer(3), is_integer(True), is_integer(3.0)
    (True, False, False)
    >>> check_int("rounds", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: rounds must be an integer >= 1, got 0
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["check_int", "is_integer"]


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (any ``numbers.Integral``, numpy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int from ``low`` to ``high`` (no upper bound when None).

    Raises:
        ValueError: naming ``name``, for anything else.
    """
    if not is_integer(value) or value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {span}, got {value!r}")
    return int(value)
