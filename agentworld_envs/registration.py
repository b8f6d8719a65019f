"""Register the simulated envs with Gymnasium.

Imported by ``agentworld_envs/__init__.py``. Registering is cheap: entry points are strings, and
nothing here imports a domain, a model library or package data.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import register

from agentworld_envs.domains import DOMAINS

__all__ = ["ENV_IDS", "domain_of", "env_id", "make"]


def env_id(domain: str) -> str:
    """The Gymnasium id of a domain, e.g. ``"AgentWorld/MCP-v0"`` for ``"mcp"``."""
    return f"AgentWorld/{DOMAINS[domain].title}-v0"


ENV_IDS: tuple[str, ...] = tuple(env_id(key) for key in DOMAINS)


def domain_of(name: str) -> str | None:
    """The domain of an env id or of a domain itself; None for anything else.

    Example:
        >>> domain_of("AgentWorld/MCP-v0"), domain_of("mcp"), domain_of("MCP")
        ('mcp', 'mcp', None)
    """
    return name if name in DOMAINS else dict(zip(ENV_IDS, DOMAINS, strict=True)).get(name)


# No backend is named here: ``SimConfig`` picks the default (the embedded world model on
# Floor and MCP; the other domains have none and ask for one).
for _key, _entry in DOMAINS.items():
    register(
        id=env_id(_key),
        entry_point="agentworld_envs.sim.env:AgentWorldEnv",
        vector_entry_point="agentworld_envs.sim.vector:AgentWorldVectorEnv",
        max_episode_steps=_entry.max_steps,
        kwargs={"domain": _key},
        disable_env_checker=True,  # see floor_tasks/__init__.py
    )
del _key, _entry


def make(domain: str, *, max_steps: int | None = None, **kwargs: Any) -> gym.Env:
    """``gym.make`` of a domain's env, with a step budget applied to env and TimeLimit alike.

    Example:
        >>> env = make("terminal", max_steps=5, backend="scripted")
        >>> env.unwrapped.max_steps, env.spec.max_episode_steps
        (5, 5)
    """
    if max_steps is not None:
        kwargs.update(max_steps=max_steps, max_episode_steps=max_steps)
    return gym.make(env_id(domain), **kwargs)
