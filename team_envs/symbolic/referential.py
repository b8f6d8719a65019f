"""The referential team (``team_envs/referential-v0``) in PettingZoo's AEC and Parallel forms.

See :class:`team_envs.symbolic.tasks.ReferentialTask` for the rules and keyword arguments.
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, wrap
from team_envs.symbolic.tasks import ReferentialTask

__all__ = ["env", "raw_env", "parallel_env"]


class raw_env(SharedContextEnv):
    """The referential team as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "referential_v0"}
    task_type = ReferentialTask


def env(**kwargs: Any) -> AECEnv:
    """The referential team as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """The referential team in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
