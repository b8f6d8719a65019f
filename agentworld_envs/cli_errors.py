"""Errors that the ``agentworld`` console script turns into one line on stderr.

Command groups raise :class:`UsageError` (exit status 2) for a command line that asks for
something that does not exist, and wrap long work in :func:`on_interrupt` so that Ctrl-C says
what was saved and how to resume (exit status 130); :func:`agentworld_envs.cli.main` handles
both, once, for every command. A :class:`UsageParser` (every ``agentworld`` parser, and the
trainers' flag parsers) raises :class:`UsageError` for a flag it cannot read, rather than
printing its usage and exiting.
"""

from __future__ import annotations

import argparse
import difflib
import math
import reprlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from agentworld_envs.errors import FieldedError

__all__ = ["Interrupted", "UnknownNameError", "UsageError", "UsageParser", "directory_arg",
           "int_at_least", "name_of", "nearest_names", "number_type", "on_interrupt",
           "refused_value", "seed_number"]

T = TypeVar("T")

_LISTED = 12
"""Most known names an error lists in full."""


def nearest_names(name: object, known: Iterable[str], n: int = 3,
                  cutoff: float = 0.6) -> list[str]:
    """The ``n`` known names nearest to ``name``, nearest first, ignoring case (``a1`` is
    nearest to ``A1``).

    Example:
        >>> nearest_names("a1", ["C1", "A11", "A1"])
        ['A1', 'A11']
    """
    by_folded: dict[str, list[str]] = {}
    for known_name in known:
        by_folded.setdefault(known_name.casefold(), []).append(known_name)
    close = difflib.get_close_matches(str(name).casefold(), list(by_folded), n, cutoff)
    return [known_name for folded in close for known_name in by_folded[folded]][:n]


def refused_value(error: Mapping[str, Any]) -> str:
    """What one pydantic error (an item of ``ValidationError.errors()``) says of the value it
    refused, for a message that names the setting first: a validator's own message, else what
    the value must be and what it was.

    Example:
        >>> refused_value({"msg": "Input should be greater than 0", "input": 0})
        'must be greater than 0, got 0'
    """
    cause = error.get("ctx", {}).get("error")
    if cause is not None:
        return str(cause)
    message = error["msg"].replace("Input should be", "must be", 1).replace(
        "greater than or equal to", "at least").replace("less than or equal to", "at most")
    return f"{message[:1].lower()}{message[1:]}, got {reprlib.repr(error['input'])}"


class UsageError(FieldedError):
    """The command line asks for something that does not exist or does not fit."""


class UnknownNameError(UsageError, ValueError):
    """A name (task id, backend, domain, env id) that is not known; the message names the
    nearest known ones."""

    def __init__(self, kind: str, name: object, known: Collection[str], listing: str = ""):
        close = nearest_names(name, known, cutoff=0.5)
        message = f"unknown {kind} {name!r}"
        if close:
            message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
        if listing:
            message += f" (list them: {listing})"
        elif len(known) <= _LISTED:
            message += f" (known: {', '.join(sorted(known))})"
        super().__init__(message)
        self.name = name


class UsageParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (a :class:`UsageError`), not a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see: {self.prog} --help)")


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


def directory_arg(value: str) -> Path:
    """An argparse type for an output folder, made later if missing: an empty path, or one
    that is, or lies under, something other than a directory, is refused."""
    if not value:
        raise argparse.ArgumentTypeError("an empty path names no directory")
    path = Path(value)
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{existing} exists and is not a directory")
    return path


def number_type(kind: Callable[[str], T], low: float, high: float | None = None, *,
                below_high: bool = False) -> Callable[[str], T]:
    """An argparse type: a finite ``kind`` number from ``low`` to ``high`` (below ``high``
    with ``below_high``; no upper bound without ``high``)."""
    bounds = (f"at least {low}" if high is None else f"at least {low} and below {high}"
              if below_high else f"from {low} to {high}")

    def check(value: str) -> T:
        number = kind(value)  # argparse reports a ValueError as "invalid int value"
        over = high is not None and (number >= high if below_high else number > high)
        infinite = isinstance(number, float) and math.isinf(number)
        if not number >= low or over or infinite:  # NaN too
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {value}")
        return number

    check.__name__ = kind.__name__
    return check


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low``."""
    return number_type(int, low)


seed_number = number_type(int, 0, 2**32 - 1)
"""An argparse type: a seed, from 0 to 2**32 - 1 (the range numpy and Transformers take)."""
