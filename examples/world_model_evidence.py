"""Evidence for the embedded world model: data, LoRA fine-tuning and held-out fidelity.

The experiment is :mod:`trainers.experiments.world_model_evidence` (what each step runs and
writes); this script runs it::

    python examples/world_model_evidence.py data --out runs/wm13
    python examples/world_model_evidence.py train --out runs/wm13 --minutes 60
    python examples/world_model_evidence.py eval --out runs/wm13 --domain floor --items 64
    python examples/world_model_evidence.py eval --out runs/wm13 --domain mcp --items 64
    python examples/world_model_evidence.py agree --out runs/wm13 --dtype bfloat16 --items 0

Quick check (the data step only, seconds): ``python examples/world_model_evidence.py data
--out wm --explore-repeats 1 --mcp-episodes 4``
"""

import sys

from agentworld_envs.cli import run_command
from trainers.experiments.world_model_evidence import main

if __name__ == "__main__":
    sys.exit(run_command(main))
