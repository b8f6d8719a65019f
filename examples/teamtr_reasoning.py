"""TeamTR against stale-sequential and single-agent GRPO on a reasoning-gym task, with a team
of language models, at a matched rollout budget.

The experiment is :mod:`trainers.experiments.teamtr_reasoning` (its methods, budget, held-out
items and intervals); this script runs it (CPU, the embedded SmolLM2-135M-Instruct base)::

    python examples/teamtr_reasoning.py --out docs/teamtr_reasoning_results.json
"""

from trainers.experiments.teamtr_reasoning import main

if __name__ == "__main__":
    main()
