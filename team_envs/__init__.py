"""team_envs: shared-context multi-agent teams as PettingZoo envs."""
