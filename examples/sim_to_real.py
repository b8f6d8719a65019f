"""Sim-to-real: does an agent trained in a simulated task do better in the real one?

The experiment is :mod:`trainers.experiments.sim_to_real` (its arms, agents and scoring, and
what ``OUT/results.json`` holds); this script runs it::

    python examples/sim_to_real.py --out runs/sim_to_real
    python examples/sim_to_real.py --agent ppo --out runs/sim_to_real_ppo
    python examples/sim_to_real.py --task mcp:inventory --out runs/sim_to_real_mcp

Interrupted? The same command with ``--resume`` keeps the finished runs (``OUT/runs.jsonl``)
and makes only the others.

Quick check (seconds; the scripted placeholder world model in every arm that simulates):
``python examples/sim_to_real.py --out s2r --seeds 1 --updates 2 --batch 4
--world-model scripted``.
"""

import sys

from agentworld_envs.cli import run_command
from trainers.experiments.sim_to_real import main

if __name__ == "__main__":
    sys.exit(run_command(main))
