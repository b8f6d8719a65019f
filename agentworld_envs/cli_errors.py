"""Errors that the ``agentworld`` console script turns into one line on stderr.

Command groups raise :class:`UsageError` (exit status 2) for a command line that asks for
something that does not exist, and wrap long work in :func:`on_interrupt` so that Ctrl-C says
what was saved and how to resume (exit status 130); :func:`agentworld_envs.cli.main` handles
both, once, for every command.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager

from agentworld_envs.errors import FieldedError

__all__ = ["Interrupted", "UnknownNameError", "UsageError", "name_of", "on_interrupt"]

_LISTED = 12
"""Most known names an error lists in full."""


class UsageError(FieldedError):
    """The command line asks for something that does not exist or does not fit."""


class UnknownNameError(UsageError, ValueError):
    """A name (task id, backend, domain, env id) that is not known; the message names the
    nearest known ones."""

    def __init__(self, kind: str, name: object, known: Collection[str], listing: str = ""):
        close = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.5)
        message = f"unknown {kind} {name!r}"
        if close:
            message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        if listing:
            message += f" (list them: {listing})"
        elif len(known) <= _LISTED:
            message += f" (known: {', '.join(sorted(known))})"
        super().__init__(message)
        self.name = name


class Interrupted(Exception):
    """Ctrl-C stopped a command; the message says what was saved and how to resume."""


@contextmanager
def on_interrupt(note: str) -> Iterator[None]:
    """Turn Ctrl-C inside the block into :class:`Interrupted` with ``note``."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(note) from None


def name_of(kind: str, known: Callable[[], Iterable[str]],
            listing: str = "") -> Callable[[str], str]:
    """An argparse type that accepts one of ``known()`` (read when the argument is parsed);
    a typo's error names the nearest known names."""

    def check(value: str) -> str:
        names = list(known())
        if value not in names:
            raise argparse.ArgumentTypeError(str(UnknownNameError(kind, value, names, listing)))
        return value

    return check
