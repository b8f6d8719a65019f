"""Moved to :mod:`agentworld_envs.sim.fidelity` (``bench`` uses ``sim``, never the reverse).

This name stays only for imports not yet switched (``sim/cli.py``, ``tests/test_sim_parsing.py``);
new code imports :mod:`agentworld_envs.sim.fidelity`.
"""

from agentworld_envs.sim.fidelity import (
    Fidelity,
    parse_json_observation,
    skeleton,
    step_fidelity,
    summarise,
)

__all__ = ["Fidelity", "parse_json_observation", "skeleton", "step_fidelity", "summarise"]
