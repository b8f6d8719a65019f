"""Benchmark time per input byte, as a ratio to the smallest size's figure of the same run."""

from __future__ import annotations

from typing import Any

__all__ = ["PerByte"]


class PerByte:
    """Records ``seconds_per_byte``, ``per_byte_vs_smallest`` and ``time_vs_smallest`` in a
    benchmark's extra info.

    Linear time shows as a flat time per byte: a per-byte ratio near 1 at every size, a time
    ratio near the size ratio (10 at 10x). The first size recorded for a shape is its baseline,
    so run the sizes smallest first.
    """

    def __init__(self) -> None:
        self._baseline: dict[str, tuple[float, float]] = {}

    def record(self, benchmark: Any, shape: str, nbytes: int) -> None:
        """Add the figures of the benchmark just run on ``nbytes`` of ``shape``."""
        stats = getattr(benchmark, "stats", None)
        if stats is None:  # --benchmark-disable
            return
        seconds = stats.stats.min
        base_seconds, base_bytes = self._baseline.setdefault(shape, (seconds, nbytes))
        benchmark.extra_info["seconds_per_byte"] = seconds / nbytes
        benchmark.extra_info["per_byte_vs_smallest"] = round(
            seconds / nbytes / (base_seconds / base_bytes), 3)
        benchmark.extra_info["time_vs_smallest"] = round(seconds / base_seconds, 3)
