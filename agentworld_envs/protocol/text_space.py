"""A Gymnasium text space that holds any Unicode text.

Gymnasium's :class:`~gymnasium.spaces.Text` accepts only ``[A-Za-z0-9]`` with ``min_length=1`` by
default, so ``"hello world"`` and ``""`` are not members. LLM observations and actions are
arbitrary Unicode: newlines, JSON, emoji and the empty string. :class:`UnicodeText` accepts any
``str`` within its length bounds and samples from a mixed charset.

Under :class:`~gymnasium.vector.AsyncVectorEnv`, pass ``shared_memory=False``
(``gym.make_vec(id, n, vectorization_mode="async", vector_kwargs={"shared_memory": False})``).
Gymnasium reads a shared text buffer once, when the vector env is built, and keeps only the
characters of the sampling charset, so shared text observations would be stale and mangled; with
the default ``shared_memory=True`` this space makes the vector env refuse to start, with that hint.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import shared_memory as _shared

__all__ = ["UnicodeText", "SAMPLE_CHARSET", "OBSERVATION_MAX_LENGTH", "ACTION_MAX_LENGTH"]

SAMPLE_CHARSET = frozenset(string.printable + "éüñßøæ中文字🙂☕—“”…{}[]\":,")
"""Characters used by :meth:`UnicodeText.sample`: printable ASCII, accents, CJK and emoji."""

OBSERVATION_MAX_LENGTH = 1 << 20
ACTION_MAX_LENGTH = 1 << 22
_SAMPLE_MAX_LENGTH = 256


class UnicodeText(spaces.Text):
    """Any Unicode string whose length lies in ``[min_length, max_length]``.

    Example:
        >>> space = UnicodeText(max_length=100)
        >>> "" in space, "café ☕\\n{\\"a\\": 1}" in space, 3 in space
        (True, True, False)
    """

    def __init__(self, max_length: int = OBSERVATION_MAX_LENGTH, *, min_length: int = 0,
                 seed: int | np.random.Generator | None = None) -> None:
        """Build the space.

        Args:
            max_length: Longest accepted text, in characters.
            min_length: Shortest accepted text, in characters (0 accepts the empty string).
            seed: Seed for :meth:`sample`.
        """
        # in a fixed order: Gymnasium before 1.4 keeps a set's order, which varies with
        # PYTHONHASHSEED, so seeded samples differed from process to process
        super().__init__(max_length, min_length=min_length,
                         charset="".join(sorted(SAMPLE_CHARSET)), seed=seed)

    def contains(self, x: Any) -> bool:
        """Return True for any ``str`` within the length bounds, whatever its characters."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Sample a string of at most 256 characters (unless a length is given in ``mask``)."""
        if mask is None and probability is None:
            upper = min(self.max_length, max(self.min_length, _SAMPLE_MAX_LENGTH))
            length = int(self.np_random.integers(self.min_length, upper + 1))
            mask = (length, None)
        return super().sample(mask=mask, probability=probability)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, UnicodeText) and other.min_length == self.min_length
                and other.max_length == self.max_length)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.min_length, self.max_length))


@_shared.create_shared_memory.register(UnicodeText)
def _no_shared_memory(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    """Refuse shared memory: a ``str`` cannot be a view of a buffer, so it would go stale."""
    raise CustomSpaceError(
        "UnicodeText observations cannot travel through shared memory (Gymnasium reads a text "
        "buffer once, when the vector env is built); use vector_kwargs={'shared_memory': False}")
