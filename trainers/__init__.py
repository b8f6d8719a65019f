"""trainers: TeamTR, its baselines, world-model training and RL-library glue."""
