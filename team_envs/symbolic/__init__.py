"""Symbolic teams: discrete messages, batched rules shared by the envs and the trainers.

Each family (relay, referential, compositional) lives in the module of its env, beside its
PettingZoo ``env``/``raw_env``/``parallel_env``; :mod:`~team_envs.symbolic.tasks` holds what they
share.
"""

from team_envs.symbolic.compositional import CompositionalTask
from team_envs.symbolic.referential import ReferentialTask
from team_envs.symbolic.relay import RelayTask
from team_envs.symbolic.tasks import SYMBOLS, SymbolicBatch, SymbolicEpisode, SymbolicTask

__all__ = ["SYMBOLS", "CompositionalTask", "ReferentialTask", "RelayTask", "SymbolicBatch",
           "SymbolicEpisode", "SymbolicTask"]
