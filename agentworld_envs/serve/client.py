"""A served env as a Gymnasium env: :class:`RemoteEnv` plays it through OpenEnv's own client.

Anything written for ``gym.make`` (the TRL adapters of :mod:`agentworld_envs.trl`, a harness
loop) then runs against an ``agentworld serve`` process on this or another machine::

    gym.register("OpenEnv/Remote-v0", entry_point="agentworld_envs.serve.client:RemoteEnv")
    env = gym.make("OpenEnv/Remote-v0", base_url="http://127.0.0.1:8000")

``reset`` and ``step`` return what the served env returned: the text, the reward, Gymnasium's
``terminated`` / ``truncated`` (kept in the observation's metadata) and the env's ``info``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)

__all__ = ["RemoteEnv"]


class RemoteEnv(gym.Env[str, str]):
    """One WebSocket session of a served env.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        message_timeout_s: Longest wait for one reset or step (a world model may think for
            minutes; the socket is kept alive by pings meanwhile).
        render_mode: Unused (the server renders nothing).

    Raises:
        ImportError: without openenv (the ``serve`` extra), saying how to install it.
    """

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, message_timeout_s: float = 3600.0,
                 render_mode: str | None = None) -> None:
        try:
            from openenv.core.generic_client import GenericEnvClient
        except ImportError as exc:
            raise ImportError('RemoteEnv needs openenv: pip install "agentworld[serve]"') from exc

        self.observation_space = UnicodeText(OBSERVATION_MAX_LENGTH)
        self.action_space = UnicodeText(ACTION_MAX_LENGTH)
        self.client = GenericEnvClient(base_url=base_url,
                                       message_timeout_s=message_timeout_s).sync()
        self.client.connect()

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the server (``options`` as the served env reads them)."""
        super().reset(seed=seed)
        result = self.client.reset(seed=seed, options=options)
        return result.observation["text"], result.observation["metadata"]["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play one assistant turn on the server."""
        result = self.client.step({"message": action})
        meta = result.observation["metadata"]
        return (result.observation["text"], float(result.reward or 0.0), meta["terminated"],
                meta["truncated"], meta["info"])

    def close(self) -> None:
        """End the session (the server frees it at once)."""
        self.client.close()
