"""agentworld_envs: environments simulated by a language world model, and the shared parts.

Shared by every package of the suite: :mod:`agentworld_envs.protocol` (text spaces, tool-call
parsing, tool schemas) and :mod:`agentworld_envs.backends` (model backends).
"""

from agentworld_envs import registration as _registration  # noqa: F401 - registers envs
