"""The reset options an env reads, and the refusal of any other.

Example:
    >>> check_reset_options({"variant": "v1"}, ("variant",))
    >>> check_reset_options({"varaint": "v1"}, ("variant",))
    Traceback (most recent call last):
    ...
    ValueError: this env reads the reset option(s) 'variant' only; got {'varaint': 'v1'}
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["check_reset_options"]


def check_reset_options(options: Any, known: tuple[str, ...]) -> None:
    """Refuse reset ``options`` that are not a dict of the ``known`` options: a misspelt or
    another family's option (AgentFloor's ``variant`` given to an AgentWorld env) would
    otherwise be ignored without a word, and a random episode drawn."""
    if options is not None and (not isinstance(options, dict) or set(options) - set(known)):
        raise ValueError(f"this env reads the reset option(s) {', '.join(map(repr, known))} "
                         f"only; got {reprlib.repr(options)}")
