"""The settings of ``agentworld serve``, as one plain-data object (the CLI fills it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServeSettings"]


@dataclass
class ServeSettings:
    """How to serve one env id over OpenEnv.

    Attributes:
        env_id: A registered ``AgentFloor/<ID>-v0`` or ``AgentWorld/<Domain>-v0``, or a task
            set ``AgentFloor/all`` / ``AgentFloor/tier:A,B`` (the seed, or
            ``reset(options={"task": ...})``, picks the task).
        host: The address to bind; loopback unless a user names another.
        port: The TCP port (0 picks a free one; the ready line says which).
        max_sessions: Concurrent sessions; one more gets OpenEnv's capacity error at once.
        backend: The world model of an ``AgentWorld/*`` env, as plain data (a name or a
            config dict); None is the env's own default (the embedded model of Floor and MCP;
            the other domains have none and must name one). Built once and
            shared by every session.
        idle_timeout_s: A session with no message for this long (and no step running) is
            closed and its memory freed; None keeps sessions until they disconnect.
        send_timeout_s: A WebSocket client that has not taken a reply (or an error, or the
            close frame) within this long, its socket's buffers full because it stopped
            reading, has its session closed and freed at once, and its socket closed (with code
            1008 and the reason, which a client that reads again within as long receives);
            otherwise the session would hold its slot, and the server's coroutine would wait,
            for as long as the client stays connected.
        batch_window_s: The shortest batching window: how long a world-model call may wait for
            other sessions' calls, from the oldest waiting one (a batch leaves at once when
            every session with an episode under way has sent its call; the window grows to a
            tenth of the last batch's time, at most 1 s, for a slow model: see
            :class:`~agentworld_envs.backends.batching.BatchingBackend`).
        shutdown_grace_s: On SIGTERM, how long running steps get to finish.
        compress: Compress WebSocket messages (permessage-deflate). Off by default: on
            loopback or a fast network it costs about 0.2 ms of server CPU per step (measured
            at 64 sessions) and saves nothing that matters.
        env_kwargs: Keyword arguments of ``gym.make`` (``reveal_reference``, ``scenarios``,
            ``mode``, ``max_episode_steps``, ...); ``max_episode_steps`` is checked here
            (``gym.make``'s: None, -1 or a whole number > 0).
    """

    env_id: str
    host: str = "127.0.0.1"
    port: int = 8000
    max_sessions: int = 256
    backend: str | dict[str, Any] | None = None
    idle_timeout_s: float | None = 600.0
    send_timeout_s: float = 60.0
    batch_window_s: float = 0.005
    shutdown_grace_s: float = 30.0
    compress: bool = False
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        idle, grace, send = self.idle_timeout_s, self.shutdown_grace_s, self.send_timeout_s
        if idle is not None and not (math.isfinite(idle) and idle > 0):
            raise ValueError(f"idle_timeout_s must be a finite number > 0 (or None: never), "
                             f"not {idle}")
        if not (math.isfinite(send) and send > 0):
            raise ValueError(f"send_timeout_s must be a finite number > 0, not {send}")
        if not (math.isfinite(grace) and grace >= 0):
            raise ValueError(f"shutdown_grace_s must be a finite number >= 0, not {grace}")
        if not 0 <= self.batch_window_s <= 1:
            raise ValueError("batch_window_s must be between 0 and 1 second")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be between 0 and 65535")
        steps = self.env_kwargs.get("max_episode_steps")
        if steps is not None and (type(steps) is not int or not (steps > 0 or steps == -1)):
            # checked here: gymnasium < 1.4's TimeLimit only asserts it
            raise ValueError(f"max_episode_steps must be a whole number > 0 (or -1: no "
                             f"TimeLimit), not {steps!r}")
