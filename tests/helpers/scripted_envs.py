"""Registered Gymnasium envs for tests of env mechanics: simulated ones on ``scripted``.

Without a backend a simulated (``AgentWorld``) env runs its domain's embedded world model, a
real language model taking seconds a step; a test of spaces, seeding, wrappers or episodes
names the instant ``scripted`` placeholder instead. Other envs take no backend.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentworld_envs.registration import ENV_IDS


def scripted_kwargs(env_id: str) -> dict[str, Any]:
    """``{"backend": "scripted"}`` for a simulated env id, ``{}`` for any other."""
    return {"backend": "scripted"} if env_id in ENV_IDS else {}


def make_scripted(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, a simulated env on the ``scripted`` backend."""
    return gym.make(env_id, **scripted_kwargs(env_id), **kwargs)
