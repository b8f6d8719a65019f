"""The reset options an env reads, and the refusal of any other.

The env is the one source of what it reads: its refusal carries the options it reads, so that a
server in front of it (``agentworld serve``) can say so in its own words.

Example:
    >>> check_reset_options({"variant": "v1"}, ("variant",))
    >>> try:
    ...     check_reset_options({"varaint": "v1"}, ("variant",))
    ... except ValueError as refused:
    ...     print(refused, refused.known)
    this env reads the reset option(s) 'variant' only; got {'varaint': 'v1'} ('variant',)
"""

from __future__ import annotations

import reprlib
from typing import Any

from agentworld_envs.errors import FieldedError

__all__ = ["UnknownResetOptionError", "check_reset_options"]


class UnknownResetOptionError(FieldedError, ValueError):
    """Reset options an env does not read.

    Attributes:
        known: The reset options the env reads.
    """

    def __init__(self, options: Any, known: tuple[str, ...]) -> None:
        super().__init__(f"this env reads the reset option(s) {', '.join(map(repr, known))} "
                         f"only; got {reprlib.repr(options)}")
        self.known = known


def check_reset_options(options: Any, known: tuple[str, ...]) -> None:
    """Refuse reset ``options`` that are not a dict of the ``known`` options: a misspelt or
    another family's option (AgentFloor's ``variant`` given to an AgentWorld env) would
    otherwise be ignored without a word, and a random episode drawn.

    Raises:
        UnknownResetOptionError: a ``ValueError`` naming the ``known`` options.
    """
    if options is not None and (not isinstance(options, dict) or set(options) - set(known)):
        raise UnknownResetOptionError(options, known)
