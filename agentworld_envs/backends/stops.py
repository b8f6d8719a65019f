"""Where an in-process answer ends: :func:`cut_at_end` keeps the new token ids up to the first
end token and says why it finished, :func:`tokens_to_stop` keeps them up to the token that
completes the first stop string, :func:`cut_at_stop` cuts the decoded text before it.
:class:`StopWatch` tells a decoder, step by step, when a row's stop string is complete, so the
row stops decoding there (as vLLM's does) instead of running on to ``max_tokens``.

The first stop string is the one a streamed answer completes first (the earliest end; of two
that end together, the longer), as vLLM stops at the first it sees.

Example:
    >>> cut_at_end([5, 2, 7], eos_ids={2}, max_tokens=8)
    ([5, 2], 'stop')
    >>> cut_at_stop("abc STOP def END", ["END", "STOP"])
    ('abc ', True)
    >>> cut_at_stop("abcdef", ["abcdef", "cd"])  # "cd" is complete first
    ('ab', True)
    >>> tokens_to_stop([1, 2, 3, 4], ["bc"], lambda ids: "".join("abcd"[i - 1] for i in ids))
    [1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["StopWatch", "cut_at_end", "cut_at_stop", "tokens_to_stop"]


def cut_at_end(new_ids: list[int], eos_ids: set[int], max_tokens: int) -> tuple[list[int], str]:
    """``new_ids`` up to and including the first of ``eos_ids``, and the finish reason:
    ``"stop"`` at an end token, else ``"length"`` when ``max_tokens`` were made."""
    ends = [j for j, token in enumerate(new_ids) if token in eos_ids]
    if ends:
        new_ids, finish = new_ids[: ends[0] + 1], "stop"
    else:
        finish = "length" if len(new_ids) >= max_tokens else "stop"
    return new_ids, finish


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` before the first stop string (see the module docstring); also whether one was
    found."""
    found = [(at + len(s), at) for s in stop if s and (at := text.find(s)) >= 0]
    return (text[: min(found)[1]], True) if found else (text, False)


def tokens_to_stop(new_ids: list[int], stop: Sequence[str],
                   decode: Callable[[list[int]], str]) -> list[int]:
    """``new_ids`` up to and including the token whose text completes a stop string (all of
    them when none does), found by bisection over the prefixes ``decode`` reads."""
    def stopped(end: int) -> bool:
        return cut_at_stop(decode(new_ids[:end]), stop)[1]

    if not stop or not stopped(len(new_ids)):
        return new_ids
    low, high = 1, len(new_ids)
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if stopped(middle) else (middle + 1, high)
    return new_ids[:low]


class StopWatch:
    """Whether a row's new tokens complete a stop string, read from their tail only: the
    ``fresh`` tokens of the last step and :attr:`reach` before them, so a look costs the same at
    any length of the answer.

    The tail holds any stop string that ends among the fresh tokens: a character is at most 4
    bytes, a token at least one, and one token more is read because a decoder may render the
    first token of a text differently (a leading space dropped). A stop string that only
    special tokens split (they decode to nothing) can be missed here; :func:`tokens_to_stop`
    still cuts the answer there, so a miss costs decoding time, never a different answer.

    Example:
        >>> watch = StopWatch(["cd"], lambda ids: "".join("abcd"[i - 1] for i in ids))
        >>> watch([1, 2], fresh=1), watch([1, 2, 3, 4], fresh=1), watch([3, 4, 1], fresh=1)
        (False, True, True)
    """

    def __init__(self, stop: Sequence[str], decode: Callable[[list[int]], str]) -> None:
        self._stop = [s for s in stop if s]
        self._decode = decode
        self.reach = 4 * max(map(len, self._stop), default=0) + 1
        """Tokens read before the fresh ones."""

    def __call__(self, new_ids: Sequence[int], fresh: int) -> bool:
        """Whether ``new_ids``, whose last ``fresh`` came in the last step, hold a stop
        string."""
        tail = list(new_ids[-(fresh + self.reach):])
        return bool(self._stop) and cut_at_stop(self._decode(tail), self._stop)[1]

    def criterion(self, torch: Any, prompt_length: int) -> Callable[..., Any]:
        """``generate``'s stopping criterion (transformers' ``StoppingCriteria`` protocol) of
        a batch whose prompts are ``prompt_length`` columns: which rows are done."""
        def done(input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            start = max(prompt_length, input_ids.shape[1] - 1 - self.reach)
            return torch.tensor([self(row, 1) for row in input_ids[:, start:].tolist()],
                                dtype=torch.bool, device=input_ids.device)
        return done
