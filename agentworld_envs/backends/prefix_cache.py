"""Prompt-prefix caching for the in-process backend: a prompt that starts with one seen before
is prefilled from where the two part.

A simulated env's world-model prompt at step t+1 begins with its whole prompt of step t (the
scenario, the tools, the turns so far), so without a cache every step prefills its whole
history again, and in a vector of 16 that prefill is most of a step. A causal model's keys and
values at a position depend only on the tokens up to it, so the first L positions of a kept
prompt serve any prompt sharing its first L tokens; only the rest is run through the model.

The scores come from a forward pass over the rest alone, not over the whole prompt, so they can
differ from a whole prefill in the last bits of float precision, as drafted decoding's and a
batch's do; only a near-tie between the two best tokens could then pick another token.

Example:
    >>> cache = PrefixCache(tokens=8)
    >>> cache.put([1, 2, 3, 4], ["layers of [1, 2, 3, 4]"])
    >>> cache.longest([1, 2, 3, 9, 9])
    (3, ['layers of [1, 2, 3, 4]'])
    >>> cache.longest([1, 2, 3, 4])  # one token is always left to run, for its scores
    (3, ['layers of [1, 2, 3, 4]'])
    >>> cache.put([5, 6, 7, 8, 9], ["layers of [5, ..., 9]"])  # 9 tokens > 8: the oldest goes
    >>> cache.longest([1, 2, 3]), cache.size
    ((0, None), 5)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PrefixCache"]


class PrefixCache:
    """The keys and values of recent prompts, up to ``tokens`` prompt tokens in all, the least
    recently used dropped first.

    An entry is a prompt's token ids and its per-layer keys and values (any objects: the
    decoder slices them). A prompt that extends a kept one replaces it. Safe to share between
    threads (a call that outlived a timeout may still be running).
    """

    def __init__(self, tokens: int) -> None:
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            raise ValueError(f"tokens must be an integer >= 1, not {tokens!r}")
        self.tokens = tokens
        self._entries: OrderedDict[tuple[int, ...], tuple[np.ndarray, Any]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Prompt tokens kept now."""
        return self._size

    def longest(self, prompt: Sequence[int]) -> tuple[int, Any]:
        """How many leading tokens of ``prompt`` a kept entry shares (at most all but the last,
        whose scores the caller needs), and that entry's layers; ``(0, None)`` if none."""
        wanted = np.asarray(prompt, dtype=np.int64)
        best, layers, key = 0, None, None
        with self._lock:
            for entry_key, (tokens, entry_layers) in self._entries.items():
                shared = _shared(tokens, wanted)
                if shared > best:
                    best, layers, key = shared, entry_layers, entry_key
            if key is not None:
                self._entries.move_to_end(key)
        best = min(best, len(wanted) - 1)
        return (best, layers) if best > 0 else (0, None)

    def put(self, prompt: Sequence[int], layers: Any) -> None:
        """Keep ``prompt``'s layers (its keys and values at every position), dropping entries
        it extends and the least recently used past the budget. A prompt longer than the whole
        budget, or one a kept entry already extends, is not kept."""
        tokens = np.asarray(prompt, dtype=np.int64)
        if len(tokens) > self.tokens:
            return
        with self._lock:
            for key, (kept, _) in list(self._entries.items()):
                shared = _shared(kept, tokens)
                if shared == len(tokens):  # a kept entry already holds this prompt
                    self._entries.move_to_end(key)
                    return
                if shared == len(kept):  # this prompt extends the kept one
                    self._drop(key)
            self._entries[tuple(prompt)] = (tokens, layers)
            self._size += len(tokens)
            while self._size > self.tokens:
                self._drop(next(iter(self._entries)))

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._size = 0

    def _drop(self, key: tuple[int, ...]) -> None:
        tokens, _ = self._entries.pop(key)
        self._size -= len(tokens)


def _shared(a: np.ndarray, b: np.ndarray) -> int:
    """The length of the common prefix of two token arrays."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n
