"""Gymnasium batches cut into actors' parts and put back together.

:func:`place_info` writes one actor's vector info (Gymnasium's layout: an array and a ``_key``
mask per key, nested dicts batched alike) into the whole vector's info at the actor's offset.
Placing every actor's info in order gives exactly the info one in-process vector env of all the
sub-envs returns: same keys, masks, dtypes (the first sub-env holding a key sets it) and blanks.

Example:
    >>> import numpy as np
    >>> whole = {}
    >>> place_info(whole, {"turn": np.array([1, 2]), "_turn": np.array([True, True])}, 0, 3)
    >>> place_info(whole, {"turn": np.array([5]), "_turn": np.array([True])}, 2, 3)
    >>> whole["turn"].tolist(), whole["_turn"].tolist()
    ([1, 2, 5], [True, True, True])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

__all__ = ["join_batches", "place_info", "split_batch"]


def _blank(part: np.ndarray, num_envs: int) -> np.ndarray:
    shape = (num_envs, *part.shape[1:])
    if part.dtype.kind == "O":
        return np.full(shape, None, dtype=object)
    return np.zeros(shape, dtype=part.dtype)


def place_info(whole: dict[str, Any], part: dict[str, Any], start: int, num_envs: int) -> None:
    """Write ``part``, the vector info of sub-envs ``start, start + 1, ...``, into ``whole``."""
    for key, value in part.items():
        mask = part.get(f"_{key}")
        if mask is None:  # a mask: written with its key
            continue
        stop = start + len(mask)
        if isinstance(value, dict):
            place_info(whole.setdefault(key, {}), value, start, num_envs)
        else:
            if key not in whole:
                whole[key] = _blank(value, num_envs)
            whole[key][start:stop] = value
        if f"_{key}" not in whole:
            whole[f"_{key}"] = np.zeros(num_envs, dtype=np.bool_)
        whole[f"_{key}"][start:stop] = mask


def split_batch(batch_space: spaces.Space, single_space: spaces.Space, batch: Any,
                blocks: Sequence[range]) -> list[Any]:
    """``batch`` (of ``batch_space``) cut into one batch of ``single_space`` per block."""
    items = list(iterate(batch_space, batch))
    return [concatenate(single_space, items[b.start:b.stop],
                        create_empty_array(single_space, len(b))) for b in blocks]


def join_batches(single_space: spaces.Space, part_spaces: Sequence[spaces.Space],
                 parts: Sequence[Any], out: Any) -> Any:
    """The batches ``parts`` (of ``part_spaces``) as one batch, written into ``out``."""
    items = [item for space, part in zip(part_spaces, parts, strict=True)
             for item in iterate(space, part)]
    return concatenate(single_space, items, out)
