"""Gymnasium's vector-info layout for a batch of sub-env infos, and one sub-env's info back.

:func:`batch_infos` is Gymnasium's own ``VectorEnv._add_info``, applied sub-env by sub-env (a
hand-written batch version measured 3x faster, 0.08 ms against 0.26 ms for 16 sub-envs, which
is nothing beside a world-model call, so the library's stays). :func:`info_at` is its inverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

__all__ = ["batch_infos", "info_at"]


class _Layout(VectorEnv):
    """Only what ``VectorEnv._add_info`` reads: the number of sub-envs."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def batch_infos(infos: Sequence[dict[str, Any] | None], num_envs: int) -> dict[str, Any]:
    """The vector info of ``infos[i]``, the info of sub-env ``i`` (None: that sub-env has none),
    exactly as Gymnasium's vector envs batch them.

    ``infos`` may be shorter than ``num_envs``; missing sub-envs have no info.
    """
    layout, batched = _Layout(num_envs), {}
    for index, info in enumerate(infos):
        if info:
            batched = layout._add_info(batched, info, index)
    return batched


def info_at(info: dict[str, Any], index: int) -> dict[str, Any]:
    """Sub-env ``index``'s info in the vector info ``info``: the keys its mask marks, nested
    dicts alike, numpy scalars as Python values.

    Example:
        >>> info_at(batch_infos([{"turn": 1, "verdict": {"passed": True}}, {"turn": 2}], 2), 1)
        {'turn': 2}
    """
    out: dict[str, Any] = {}
    for key, value in info.items():
        mask = info.get(f"_{key}")
        if mask is None or not mask[index]:
            continue
        item = info_at(value, index) if isinstance(value, dict) else value[index]
        out[key] = item.item() if isinstance(item, np.generic) else item
    return out
