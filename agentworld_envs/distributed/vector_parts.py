"""Gymnasium batches cut into actors' parts, and vector infos put back together.

:func:`place_info` writes one actor's vector info (Gymnasium's layout: an array and a ``_key``
mask per key, nested dicts batched alike) into the whole vector's info at the actor's offset.
Placing every actor's info in order gives exactly the info one in-process vector env of all the
sub-envs returns: same keys, masks, dtypes (the first sub-env holding a key sets it, by
Gymnasium's rule, where an actor sends its values as they are, in an object array) and blanks.
:func:`overlay_info` takes some sub-envs' entries from one info and the rest from another.

Example:
    >>> import numpy as np
    >>> whole = {}
    >>> place_info(whole, {"turn": np.array([1, 2]), "_turn": np.array([True, True])}, 0, 3)
    >>> place_info(whole, {"turn": np.array([5]), "_turn": np.array([True])}, 2, 3)
    >>> whole["turn"].tolist(), whole["_turn"].tolist()
    ([1, 2, 5], [True, True, True])
    >>> top = {"fault": np.array([None, "lost", None]), "_fault": np.array([False, True, False])}
    >>> info = overlay_info(whole, top, np.array([False, True, False]))
    >>> info["_turn"].tolist(), info["_fault"].tolist()
    ([True, False, True], [False, True, False])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from agentworld_envs.sim.vector_info import batch_infos

__all__ = ["overlay_info", "place_info", "split_batch"]


def _blank(part: np.ndarray, num_envs: int) -> np.ndarray:
    shape = (num_envs, *part.shape[1:])
    if part.dtype.kind == "O":
        return np.full(shape, None, dtype=object)
    return np.zeros(shape, dtype=part.dtype)


def _started(key: str, part: np.ndarray, mask: np.ndarray, start: int,
             num_envs: int) -> np.ndarray:
    """The whole's array for ``key``, first held by ``part``: a blank of its dtype, or, for
    values sent as they are (an object array), Gymnasium's array for the first of them."""
    held = np.flatnonzero(mask)
    if part.dtype.kind != "O" or not len(held):
        return _blank(part, num_envs)
    first = start + int(held[0])
    return batch_infos([None] * first + [{key: part[held[0]]}], num_envs)[key]


def _put(array: np.ndarray, part: np.ndarray, mask: np.ndarray, start: int) -> None:
    """Write ``part``'s entries under ``mask`` into ``array`` from ``start`` on."""
    if array.dtype.kind == "O" or part.dtype.kind != "O":
        array[start:start + len(mask)][mask] = part[mask]  # the others keep the blank
        return
    for j in np.flatnonzero(mask):  # values as they are into a typed array: as Gymnasium
        array[start + j] = part[j]  # casts them, one by one (an ndarray fills its row)


def place_info(whole: dict[str, Any], part: dict[str, Any], start: int, num_envs: int) -> None:
    """Write ``part``, the vector info of sub-envs ``start, start + 1, ...``, into ``whole``."""
    for key, value in part.items():
        mask = part.get(f"_{key}")
        if mask is None:  # a mask: written with its key
            continue
        if isinstance(value, dict):
            place_info(whole.setdefault(key, {}), value, start, num_envs)
        else:
            if key not in whole:
                whole[key] = _started(key, value, mask, start, num_envs)
            _put(whole[key], value, mask, start)
        if f"_{key}" not in whole:
            whole[f"_{key}"] = np.zeros(num_envs, dtype=np.bool_)
        whole[f"_{key}"][start:start + len(mask)] = mask


def _take(out: dict[str, Any], info: dict[str, Any], rows: np.ndarray) -> None:
    """Write ``info``'s entries of the sub-envs ``rows`` (a mask) into ``out``."""
    for key, value in info.items():
        mask = info.get(f"_{key}")
        if mask is None:
            continue
        if isinstance(value, dict):
            _take(out.setdefault(key, {}), value, rows)
        else:
            if key not in out:
                out[key] = _blank(value, len(rows))
            out[key][rows & mask] = value[rows & mask]
        out.setdefault(f"_{key}", np.zeros(len(rows), dtype=np.bool_))[rows] = mask[rows]


def overlay_info(base: dict[str, Any], top: dict[str, Any], where: np.ndarray) -> dict[str, Any]:
    """A new vector info: sub-envs ``where`` (a mask) have ``top``'s entries, the others
    ``base``'s."""
    out: dict[str, Any] = {}
    _take(out, base, ~where)
    _take(out, top, where)
    return out


def split_batch(batch_space: spaces.Space, single_space: spaces.Space, batch: Any,
                blocks: Sequence[range]) -> list[Any]:
    """``batch`` (of ``batch_space``) cut into one batch of ``single_space`` per block; a batch
    with another number of items than the blocks hold raises ``ValueError``."""
    items = list(iterate(batch_space, batch))
    if len(items) != blocks[-1].stop:
        raise ValueError(f"expected {blocks[-1].stop} actions, one per sub-env, got {len(items)}")
    return [concatenate(single_space, items[b.start:b.stop],
                        create_empty_array(single_space, len(b))) for b in blocks]
