"""A key-value cache that grows in place, for the ragged decoder's joined batch.

transformers' ``DynamicLayer`` appends a step's keys and values with ``torch.cat``, copying the
whole cache at every decode step: for a batch of 14 rows of 700 tokens on a CPU that copy was
82% of a step's time (``torch.profiler``). Here each layer's keys and values live in buffers
with room to spare; a step writes its positions into the room, and ``keys`` / ``values`` are
views of the filled part, so a step copies only what it adds. Cropping (a rejected draft)
shrinks the view; the room grows by a quarter of the length (at least :data:`ROOM` positions)
when full. The attention reads the same numbers from a view as from a copy.

Imports torch and transformers: import it only where they are installed (the ``hf`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

__all__ = ["ROOM", "GrowingCache", "GrowingLayer"]

ROOM = 128
"""Least spare positions a layer's buffers get when they grow."""


class GrowingLayer(DynamicLayer):
    """One layer's keys and values, ``[batch, heads, length, head size]`` views of buffers
    with spare positions (see the module docstring)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.lazy_initialization(keys, values)
        self._length = keys.shape[-2]
        self._key_buffer, self._value_buffer = keys, values
        self._show()

    @property
    def room(self) -> int:
        """Positions the buffers can take before they grow."""
        return self._key_buffer.shape[-2] - self._length

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object,
               **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new positions after the filled ones; the keys and values so far."""
        end = self._length + key_states.shape[-2]
        if end > self._key_buffer.shape[-2]:
            self._grow(end + max(ROOM, end // 4))
        self._key_buffer[..., self._length:end, :] = key_states
        self._value_buffer[..., self._length:end, :] = value_states
        self._length = end
        self._show()
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` positions (a negative count, as
        ``DynamicLayer.crop`` takes it); their room is written over next."""
        if tokens_to_remove > 0:
            raise ValueError(f"crop takes a negative count of positions to remove, not "
                             f"{tokens_to_remove}")
        self._length -= min(-tokens_to_remove, self._length)
        self._show()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep only the rows ``indices``."""
        self._key_buffer = self._key_buffer[indices]
        self._value_buffer = self._value_buffer[indices]
        self._show()

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat every row ``repeats`` times."""
        self._key_buffer = self._key_buffer.repeat_interleave(repeats, dim=0)
        self._value_buffer = self._value_buffer.repeat_interleave(repeats, dim=0)
        self._show()

    def _grow(self, capacity: int) -> None:
        for name in ("_key_buffer", "_value_buffer"):
            old = getattr(self, name)
            new = old.new_zeros((*old.shape[:-2], capacity, old.shape[-1]))
            new[..., : self._length, :] = old[..., : self._length, :]
            setattr(self, name, new)

    def _show(self) -> None:
        self.keys = self._key_buffer[..., : self._length, :]
        self.values = self._value_buffer[..., : self._length, :]


class GrowingCache(DynamicCache):
    """A ``DynamicCache`` of :class:`GrowingLayer` s."""

    def __init__(self, layers: list[GrowingLayer]) -> None:
        Cache.__init__(self, layers=layers)

    @classmethod
    def joined(cls, rows: Sequence[Sequence[tuple[torch.Tensor, torch.Tensor]]],
               room: int = ROOM) -> GrowingCache:
        """The rows' caches (each a list of one-row ``(keys, values)`` per layer) in one batch,
        left-padded with zeros to the longest, with ``room`` spare positions."""
        longest = max(row[0][0].shape[-2] for row in rows)
        layers = []
        for index, (keys, values) in enumerate(rows[0]):
            buffers = [part.new_zeros((len(rows), *part.shape[1:-2], longest + room,
                                       part.shape[-1])) for part in (keys, values)]
            for slot, row in enumerate(rows):
                for buffer, part in zip(buffers, row[index], strict=True):
                    buffer[slot : slot + 1, ..., longest - part.shape[-2] : longest, :] = part
            layer = GrowingLayer(*buffers)
            layer.crop(-room)
            layers.append(layer)
        return cls(layers)
