"""Benchmark time per input byte, as a ratio to the smallest size's figure of the same run."""

from __future__ import annotations

from typing import Any

__all__ = ["PerByte"]


class PerByte:
    """Records ``seconds_per_byte`` and ``per_byte_vs_smallest`` in a benchmark's extra info.

    Linear time shows as a flat time per byte: a ratio near 1 at every size. The first size
    recorded for a shape is its baseline, so run the sizes smallest first.
    """

    def __init__(self) -> None:
        self._baseline: dict[str, float] = {}

    def record(self, benchmark: Any, shape: str, nbytes: int) -> None:
        """Add the figures of the benchmark just run on ``nbytes`` of ``shape``."""
        stats = getattr(benchmark, "stats", None)
        if stats is None:  # --benchmark-disable
            return
        per_byte = stats.stats.min / nbytes
        baseline = self._baseline.setdefault(shape, per_byte)
        benchmark.extra_info["seconds_per_byte"] = per_byte
        benchmark.extra_info["per_byte_vs_smallest"] = round(per_byte / baseline, 3)
