"""Shape buckets of the ``hf`` backend's static cache: batch sizes and lengths rounded up to a
few values, so the compiled decode step's shapes repeat.

Example:
    >>> bucket_rows(3, most=8), bucket_length(100), bucket_length(600)
    (4, 128, 640)
"""

from __future__ import annotations

__all__ = ["bucket_length", "bucket_rows"]


def bucket_rows(rows: int, most: int) -> int:
    """The batch size a static-cache ``generate`` runs ``rows`` prompts at: the next power of
    two, at most ``most`` (the backend's ``batch_size``, itself a bucket)."""
    return min(1 << (rows - 1).bit_length(), most)


def bucket_length(tokens: int) -> int:
    """``tokens`` rounded up to a quarter-octave step (a multiple of 64 up to 512, of 128 up to
    1,024, ...): four lengths per doubling, under 25% padding from 256 tokens on."""
    step = 1 << max((tokens - 1).bit_length() - 3, 6)
    return -(-tokens // step) * step
