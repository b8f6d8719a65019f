"""Symbolic teams: discrete messages, batched rules shared by the envs and the trainers."""

from team_envs.symbolic.tasks import (
    SYMBOLS,
    CompositionalTask,
    ReferentialTask,
    RelayTask,
    SymbolicBatch,
    SymbolicEpisode,
    SymbolicTask,
)

__all__ = ["SYMBOLS", "CompositionalTask", "ReferentialTask", "RelayTask", "SymbolicBatch",
           "SymbolicEpisode", "SymbolicTask"]
