"""The OpenEnv app of one served id: OpenEnv's own server, routes and protocol, with our sessions.

:func:`build_app` builds OpenEnv's ``HTTPEnvServer`` (HTTP ``/reset`` ``/step`` ``/state``
``/schema`` ``/metadata`` ``/health`` and WebSocket ``/ws`` sessions, capped at
``max_sessions``, over the cap OpenEnv's capacity error at once) on a factory of
:class:`~agentworld_envs.serve.session.GymSession`, and adds ``GET /agentworld/stats``.

Idle sessions are closed by our own sweep rather than OpenEnv's reaper, because OpenEnv counts
a session's activity only when a message is answered: its reaper would close a session in the
middle of a step that thinks for longer than the timeout. Ours never closes a session whose
reset or step is running.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig

from agentworld_envs.serve.schema import EpisodeState, TurnAction, TurnObservation
from agentworld_envs.serve.served_env import ServedEnv
from agentworld_envs.serve.session import GymSession
from agentworld_envs.serve.settings import ServeSettings

__all__ = ["build_app"]

_log = logging.getLogger(__name__)


class _Server(HTTPEnvServer):
    """OpenEnv's server with an idle sweep that spares running steps."""

    def __init__(self, served: ServedEnv) -> None:
        settings = served.settings
        super().__init__(functools.partial(GymSession, served), TurnAction, TurnObservation,
                         concurrency_config=ConcurrencyConfig(
                             max_concurrent_envs=settings.max_sessions, session_timeout=None),
                         env_name=settings.env_id, state_cls=EpisodeState)
        self.idle_timeout_s = settings.idle_timeout_s
        self._sweeper: asyncio.Task[None] | None = None

    def idle_sessions(self) -> list[str]:
        """Sessions with no reset or step running and none for longer than the timeout."""
        limit = time.monotonic() - self.idle_timeout_s
        return [sid for sid, env in list(self._sessions.items())
                if isinstance(env, GymSession) and not env.busy and env.last_active < limit]

    async def _sweep(self) -> None:
        interval = min(max(self.idle_timeout_s / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            for sid in self.idle_sessions():
                env = self._sessions.get(sid)
                if isinstance(env, GymSession):
                    env.close_for(f"the session was idle for more than "
                                  f"{self.idle_timeout_s:g} s and was closed")
                try:
                    await self._destroy_session(sid)
                except Exception as exc:  # noqa: BLE001 - the sweep must go on
                    _log.warning("closing idle session %s failed: %s", sid, exc)

    def start_sweep(self) -> None:
        """Start the idle sweep (on the app's start-up), when a timeout is set."""
        if self.idle_timeout_s is not None and self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def stop_sweep(self) -> None:
        """Stop the idle sweep."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None


def build_app(settings: ServeSettings, served: ServedEnv | None = None) -> FastAPI:
    """The FastAPI app serving ``settings.env_id`` over OpenEnv's protocol.

    Args:
        settings: What to serve and how.
        served: The shared parts, when the caller built them already (loading the world
            model before the port opens); built here otherwise. The app closes them on
            shutdown.
    """
    served = served or ServedEnv(settings)
    server = _Server(served)
    app = FastAPI(title=f"agentworld: {settings.env_id}",
                  description="An agentworld env served over OpenEnv's protocol.")
    server.register_routes(app)

    @app.exception_handler(ValueError)
    async def bad_request(request: Request, exc: ValueError) -> JSONResponse:
        """Bad input to the stateless HTTP routes (a bad seed, a step with no reset) is the
        client's error, 400 with the reason, not a server error."""
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.get("/agentworld/stats", tags=["Health"])
    def stats() -> dict[str, Any]:
        """Sessions, steps and the world model's batches since start-up."""
        return {**served.stats(), "env_id": settings.env_id,
                "capacity": server.get_capacity_status().model_dump()}

    async def start() -> None:
        server.start_sweep()

    async def stop() -> None:
        server.stop_sweep()
        served.close()

    app.router.on_startup.append(start)
    app.router.on_shutdown.append(stop)
    app.state.served = served
    return app
