"""Past one machine: vector envs whose sub-envs live in Ray actors (extra ``ray``).

``ray`` is imported when a :class:`RayVectorEnv` is made, never at package import.
"""

from agentworld_envs.distributed.ray_vector_env import RayVectorEnv

__all__ = ["RayVectorEnv"]
