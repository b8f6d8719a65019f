"""The in-place growing cache holds what transformers' ``DynamicLayer`` holds after the same
updates, crops and row selections, and the joined cache left-pads rows with zeros."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers.cache_utils import DynamicLayer  # noqa: E402

from agentworld_envs.backends.growing_cache import ROOM, GrowingCache, GrowingLayer  # noqa: E402


def states(rows: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, 3, length, 4, generator=generator),
            torch.randn(rows, 3, length, 4, generator=generator))


@pytest.mark.parametrize("seed", range(5))
def test_a_growing_layer_holds_what_a_dynamic_layer_holds(seed: int) -> None:
    rng = random.Random(seed)
    rows = 6
    first = states(rows, rng.randint(1, 40), seed)
    growing, dynamic = GrowingLayer(*first), DynamicLayer()
    dynamic.update(*first)
    for step in range(60):
        move = rng.random()
        if move < 0.6:  # a decode or verify step, sometimes past the room
            new = states(rows, rng.choice([1, 1, 9, ROOM + 7]), seed * 100 + step)
            got = growing.update(*new)
            want = dynamic.update(*new)
            assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
        elif move < 0.85 and dynamic.get_seq_length() > 1:  # a rejected draft
            cut = -rng.randint(1, dynamic.get_seq_length() - 1)
            growing.crop(cut)
            dynamic.crop(cut)
        elif rows > 1:  # a row that ended leaves the batch
            keep = torch.tensor(sorted(rng.sample(range(rows), rows - 1)))
            growing.batch_select_indices(keep)
            dynamic.batch_select_indices(keep)
            rows -= 1
        assert growing.get_seq_length() == dynamic.get_seq_length()
        assert torch.equal(growing.keys, dynamic.keys)
        assert torch.equal(growing.values, dynamic.values)
    growing.crop(0)
    assert torch.equal(growing.keys, dynamic.keys)
    with pytest.raises(ValueError, match="negative count"):
        growing.crop(3)


def test_an_update_within_the_room_writes_in_place() -> None:
    layer = GrowingCache.joined([[states(1, 5, 0)]], room=16).layers[0]
    buffer = layer.keys.untyped_storage().data_ptr()
    assert layer.room == 16
    layer.update(*states(1, 10, 1))
    assert layer.keys.untyped_storage().data_ptr() == buffer and layer.room == 6
    layer.update(*states(1, 10, 2))  # past the room: the buffers grow
    assert layer.keys.untyped_storage().data_ptr() != buffer
    assert layer.get_seq_length() == 25 and layer.room >= ROOM


def test_joined_rows_are_left_padded_with_zeros() -> None:
    short, long_ = states(1, 3, 0), states(1, 7, 1)
    cache = GrowingCache.joined([[short, short], [long_, long_]])
    assert len(cache.layers) == 2 and cache.get_seq_length() == 7
    for layer in cache.layers:
        assert torch.equal(layer.keys[0, :, 4:], short[0][0])
        assert torch.equal(layer.values[0, :, :4], torch.zeros(3, 4, 4))
        assert torch.equal(layer.keys[1], long_[0][0])
