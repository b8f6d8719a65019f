"""TeamTR against stale-sequential and single-agent GRPO on a reasoning-gym task, with a team
of language models, at a matched rollout budget.

The experiment is :mod:`trainers.experiments.teamtr_reasoning` (its methods, budget, held-out
items and intervals); this script runs it (CPU, the embedded SmolLM2-135M-Instruct base), as
docs/teamtr_reasoning.md was run::

    python examples/teamtr_reasoning.py --prompts-per-rollout 4 --group-size 4 \
        --total-episodes 48 --max-new-tokens 16 --update-epochs 1 --held-out 32 \
        --methods teamtr,stale_sequential,single_agent_grpo \
        --out runs/teamtr_reasoning_s3/results.json   # --resume to continue it
"""

import sys

from agentworld_envs.cli import run_command
from trainers.experiments.teamtr_reasoning import main

if __name__ == "__main__":
    sys.exit(run_command(main))
