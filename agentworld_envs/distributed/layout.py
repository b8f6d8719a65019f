"""Which sub-envs each actor holds, and the seed each sub-env resets with.

Sub-envs are numbered as in one in-process vector env of ``num_envs``. Actor k holds a
contiguous block of whole groups, so a GRPO group never straddles two actors.

Example:
    >>> actor_blocks(10, num_actors=3, group_size=2)
    [range(0, 4), range(4, 8), range(8, 10)]
    >>> sub_env_seeds(7, num_envs=4, group_size=2, rng=None)
    [7, 7, 8, 8]
"""

from __future__ import annotations

from agentworld_envs.protocol.integers import is_integer
from agentworld_envs.protocol.seeding import sub_env_seeds

__all__ = ["actor_blocks", "check_layout", "sub_env_seeds"]


def check_layout(num_envs: int, group_size: int, num_actors: int | None = None) -> int:
    """The number of groups; ``TypeError`` unless each is an int, ``ValueError`` unless
    ``num_envs`` is a positive multiple of ``group_size`` and ``num_actors`` (where given)
    between 1 and the number of groups."""
    for name, value in (("num_envs", num_envs), ("group_size", group_size),
                        ("num_actors", num_actors)):
        if not is_integer(value) and not (name == "num_actors" and value is None):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if group_size < 1 or num_envs % group_size:
        raise ValueError(f"num_envs ({num_envs}) must be a multiple of group_size ({group_size})")
    groups = num_envs // group_size
    if num_actors is not None and not 1 <= num_actors <= groups:
        raise ValueError(f"num_actors must be between 1 and the number of groups ({groups}), "
                         f"got {num_actors}")
    return groups


def actor_blocks(num_envs: int, num_actors: int, group_size: int) -> list[range]:
    """Contiguous blocks of whole groups, as even as possible, the larger first."""
    groups = check_layout(num_envs, group_size, num_actors)
    blocks, start = [], 0
    for k in range(num_actors):
        size = (groups // num_actors + (k < groups % num_actors)) * group_size
        blocks.append(range(start, start + size))
        start += size
    return blocks
