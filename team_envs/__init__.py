"""team_envs: shared-context multi-agent teams as PettingZoo envs.

Importing the package registers every team env in PettingZoo's registry, in both forms::

    import pettingzoo, team_envs
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=4)
    par = pettingzoo.make("parallel", "team_envs/countdown-v0", handoff="router")

Symbolic teams (``relay``, ``referential``, ``compositional``) exchange a few symbols per
message and also expose a batched numpy form of their rules for fast training
(:class:`team_envs.symbolic.SymbolicBatch`). Text teams (``arithmetic_chain``, ``logic_grid``,
``countdown``, ``floor_team``, and ``reasoning`` over the ``reasoning-gym`` package's datasets)
are for LLM agents. Each env module has ``env()``, ``raw_env`` and
``parallel_env()``.
"""

import pettingzoo

__all__ = ["ENV_MODULES", "ENV_IDS"]

ENV_MODULES = {
    "team_envs/relay-v0": "team_envs.symbolic.relay",
    "team_envs/referential-v0": "team_envs.symbolic.referential",
    "team_envs/compositional-v0": "team_envs.symbolic.compositional",
    "team_envs/arithmetic_chain-v0": "team_envs.text.arithmetic",
    "team_envs/logic_grid-v0": "team_envs.text.logic_grid",
    "team_envs/countdown-v0": "team_envs.text.countdown",
    "team_envs/floor_team-v0": "team_envs.text.floor_team",
    "team_envs/reasoning-v0": "team_envs.text.reasoning",
}
"""Registered env id -> the module holding its ``env``, ``raw_env`` and ``parallel_env``."""
ENV_IDS = tuple(ENV_MODULES)

for _env_id, _module in ENV_MODULES.items():
    pettingzoo.register("aec", _env_id, f"{_module}:env")
    pettingzoo.register("parallel", _env_id, f"{_module}:parallel_env")
del _env_id, _module
