"""A value as an error message shows it: its ``repr``, cut to a length a line can hold.

Example:
    >>> shown("a short value"), shown("x" * 50)
    ("'a short value'", "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...")
"""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]


def shown(value: Any, limit: int = 40) -> str:
    """``repr(value)``, its first ``limit - 3`` characters and ``...`` when longer than
    ``limit``."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."
