"""The compositional team (``team_envs/compositional-v0``) in PettingZoo's AEC and Parallel forms.

See :class:`team_envs.symbolic.tasks.CompositionalTask` for the rules and keyword arguments.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, wrap
from team_envs.symbolic.tasks import CompositionalTask

__all__ = ["env", "raw_env", "parallel_env"]


class raw_env(SharedContextEnv):
    """The compositional team as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "compositional_v0"}
    task_type = CompositionalTask


def env(**kwargs: Any) -> AECEnv:
    """The compositional team as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """The compositional team in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
