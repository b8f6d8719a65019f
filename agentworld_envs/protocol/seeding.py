"""Seeds and orders drawn from a generator, shared by every env of the suite.

Every random draw of an env comes from its ``np_random`` (or a seed derived here from an
explicit one), so equal seeds give equal episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from agentworld_envs.protocol.integers import is_integer

__all__ = ["SEED_BOUND", "draw_seed", "episode_seed", "generator_state", "request_seed",
           "restore_generator", "shuffled", "sub_env_seeds"]

T = TypeVar("T")

SEED_BOUND = 2**31 - 1
"""Seeds are drawn below this prime (a seed fits a signed 32-bit integer everywhere)."""
_STREAM_STRIDE = 0x9E3779B1
"""How far apart sampling streams start; as :data:`SEED_BOUND` is prime, streams below it never
share a request seed for one draw."""


def shuffled(items: Sequence[T], rng: np.random.Generator) -> list[T]:
    """``items`` in an order drawn from ``rng`` (one ``permutation`` draw).

    Example:
        >>> shuffled(["a", "b", "c"], np.random.default_rng(0))
        ['c', 'a', 'b']
    """
    return [items[int(i)] for i in rng.permutation(len(items))]


def draw_seed(rng: np.random.Generator) -> int:
    """A seed below :data:`SEED_BOUND` drawn from ``rng`` (one ``integers`` draw)."""
    return int(rng.integers(SEED_BOUND))


def request_seed(rng: np.random.Generator, stream: int = 0) -> int:
    """A model request's sampling seed, below :data:`SEED_BOUND`: one raw draw of ``rng``'s bit
    generator (``rng.integers`` costs several microseconds per step), shifted by sampling stream
    ``stream``: equal generators in different streams draw different seeds (a GRPO group)."""
    return (int(rng.bit_generator.random_raw()) + stream * _STREAM_STRIDE) % SEED_BOUND


def episode_seed(seed: int, episode: int) -> int:
    """The seed of episode ``episode`` (1, 2, ...) after a reset with ``seed``, the same for every
    sub-env reset with ``seed`` whatever their episodes' lengths (a GRPO group's next task).

    Example:
        >>> episode_seed(7, 1) == episode_seed(7, 1) != episode_seed(7, 2)
        True
    """
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0]) % SEED_BOUND


def generator_state(rng: np.random.Generator | None) -> dict | None:
    """Where ``rng`` is in its stream (None for no generator yet), for
    :func:`restore_generator`."""
    return None if rng is None else rng.bit_generator.state


def restore_generator(rng: np.random.Generator | None, state: dict | None) -> None:
    """Put ``rng`` back where :func:`generator_state` found it: the same object, so whatever
    draws from it (an episode under way) stays in step with its owner."""
    if rng is not None and state is not None:
        rng.bit_generator.state = state


def sub_env_seeds(seed: int | list[int | None] | None, num_envs: int, group_size: int,
                  rng: np.random.Generator | None) -> list[int | None]:
    """Sub-env i's reset seed: ``seed + i // group_size``, as one in-process vector env gives
    ``seed + i`` when ``group_size`` is 1.

    With no seed and groups, one is drawn from ``rng`` so that a group still shares its task;
    with no seed and no groups, every sub-env goes on with its own generator (None). Any other
    seed than an int, None or a list of ``num_envs`` of them raises.
    """
    if isinstance(seed, list | tuple):
        if len(seed) != num_envs:
            raise ValueError(f"expected {num_envs} seeds, got {len(seed)}")
        if not all(item is None or is_integer(item) for item in seed):
            raise _bad_seed(seed, num_envs)
        return [None if item is None else int(item) for item in seed]
    if seed is None:
        if group_size == 1:
            return [None] * num_envs
        seed = draw_seed(rng)
    if not is_integer(seed):
        raise _bad_seed(seed, num_envs)
    return [int(seed) + i // group_size for i in range(num_envs)]


def _bad_seed(seed: object, num_envs: int) -> TypeError:
    return TypeError(f"seed must be an int, None or a list of {num_envs} ints or None, "
                     f"got {seed!r}")
