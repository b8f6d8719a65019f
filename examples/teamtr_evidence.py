"""TeamTR's central claim on warm-started relay teams of 2, 4 and 8 agents, with exact gains.

The experiment is :mod:`trainers.experiments.teamtr_evidence` (what it measures and how);
this script runs it.

Run: ``python examples/teamtr_evidence.py`` writes
``runs/teamtr_evidence/{results.json,report.md,*.png}``; ``--docs docs`` also writes the plots and
``teamtr_evidence_results.json`` (runs and summary: every number of the doc) to ``docs/``.
``--quick`` is a tiny version that checks the script.
"""

import sys

from agentworld_envs.cli import run_command
from trainers.experiments.teamtr_evidence import main

if __name__ == "__main__":
    sys.exit(run_command(main))
