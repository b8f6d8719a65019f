"""Trainer histories compared across runs."""

from __future__ import annotations

from typing import Any


def untimed(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records without their wall-clock timings, which no seed fixes."""
    return [{k: v for k, v in r.items() if not k.startswith("time/")
             and k != "charts/tokens_per_s"} for r in history]
