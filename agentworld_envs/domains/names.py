"""Invented names from syllables, drawn from an explicit generator (never global randomness)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

__all__ = ["distinct", "distinct_draws", "fictional_person", "fictional_word", "pick", "sample",
           "shuffled"]

T = TypeVar("T")

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "qu", "r",
           "s", "sh", "st", "t", "th", "v", "w", "z")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "ia", "y")
_CODAS = ("", "n", "r", "l", "s", "th", "m", "nd", "rk", "x", "v", "sh")


def pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    """One item, uniformly."""
    return items[int(rng.integers(len(items)))]


def sample(rng: np.random.Generator, items: Sequence[T], count: int) -> list[T]:
    """``count`` distinct items, in random order."""
    return [items[int(i)] for i in rng.permutation(len(items))[:count]]


def distinct(rng: np.random.Generator, values: Sequence[T], count: int) -> list[T]:
    """``count`` distinct draws from ``values`` (a ``range`` is never listed), uniformly, so
    that the records or answers they go into are exchangeable: none stands out by its value."""
    return [values[int(i)] for i in rng.choice(len(values), count, replace=False)]


def distinct_draws(rng: np.random.Generator, draw: Callable[[np.random.Generator], T],
                   count: int) -> list[T]:
    """``count`` distinct results of ``draw``, in the order drawn (repeats are drawn again)."""
    found: list[T] = []
    while len(found) < count:
        if (value := draw(rng)) not in found:
            found.append(value)
    return found


def shuffled(rng: np.random.Generator, items: Sequence[T],
             marked: Sequence[int] = ()) -> tuple[list[T], list[int]]:
    """The items in random order, and where the ``marked`` positions ended up."""
    order = [int(i) for i in rng.permutation(len(items))]
    return [items[i] for i in order], [order.index(i) for i in marked]


def fictional_word(rng: np.random.Generator, syllables: int = 2) -> str:
    """An invented, capitalised word such as ``Velmora``."""
    parts = [pick(rng, _ONSETS) + pick(rng, _VOWELS) + pick(rng, _CODAS)
             for _ in range(syllables)]
    return "".join(parts).capitalize()


def fictional_person(rng: np.random.Generator) -> str:
    """An invented first and last name."""
    return f"{fictional_word(rng, 2)} {fictional_word(rng, int(rng.integers(2, 4)))}"
