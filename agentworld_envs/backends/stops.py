"""Where an in-process answer ends: :func:`cut_at_end` keeps the new token ids up to the first
end token and says why it finished, :func:`cut_at_stop` cuts the decoded text at the first stop
string.

Example:
    >>> cut_at_end([5, 2, 7], eos_ids={2}, max_tokens=8)
    ([5, 2], 'stop')
    >>> cut_at_stop("abc STOP def END", ["END", "STOP"])
    ('abc ', True)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["cut_at_end", "cut_at_stop"]


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
    """Cut ``text`` at the first stop string; also say whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)
