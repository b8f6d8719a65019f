"""``agentworld serve ENV_ID``: serve one env id over OpenEnv's protocol until SIGTERM or Ctrl-C.

The world model is loaded before the port opens, so a server that answers ``/health`` is
ready; the line ``agentworld serve: ready at http://HOST:PORT`` on stderr says the same to a
script. The server executes nothing on the host: agent actions are read as text and played on
the simulated or scripted tools.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from agentworld_envs.cli_errors import UsageError

__all__ = ["add_commands", "parse_kw"]

_HINT = 'agentworld serve needs openenv and uvicorn: pip install "agentworld[serve]"'


def parse_kw(items: list[str]) -> dict[str, Any]:
    """Env keyword arguments from ``--kw`` values: ``key=value`` (the value read as JSON
    where it is JSON, else as text) or a JSON object.

    Example:
        >>> parse_kw(["reveal_reference=true", "scenarios=generated", '{"max_episode_steps": 4}'])
        {'reveal_reference': True, 'scenarios': 'generated', 'max_episode_steps': 4}
    """
    kwargs: dict[str, Any] = {}
    for item in items:
        if item.lstrip().startswith("{"):
            try:
                data = json.loads(item)
            except json.JSONDecodeError as exc:
                raise UsageError(f"--kw {item[:40]!r} is not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise UsageError("--kw as JSON must be an object")
            kwargs.update(data)
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--kw {item[:40]!r}: expected key=value or a JSON object")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs


def add_commands(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's arguments."""
    from agentworld_envs.serve.settings import ServeSettings

    defaults = ServeSettings(env_id="")
    parser.add_argument("env_id", metavar="ENV_ID",
                        help="AgentFloor/<ID>-v0, AgentWorld/<Domain>-v0, AgentFloor/all or "
                             "AgentFloor/tier:A,B")
    parser.add_argument("--host", default=defaults.host,
                        help="address to bind (default: loopback only; anything else must be "
                             "named here)")
    parser.add_argument("--port", type=int, default=defaults.port, help="0 picks a free port")
    parser.add_argument("--max-sessions", type=int, default=defaults.max_sessions,
                        help="concurrent sessions; one more gets OpenEnv's capacity error")
    parser.add_argument("--backend", default=None,
                        help="the world model of an AgentWorld env: a name or a JSON config "
                             "(default: the embedded model of Floor and MCP; the other domains "
                             "need one), loaded once for all sessions")
    parser.add_argument("--idle-timeout", type=float, default=defaults.idle_timeout_s,
                        help="close a session after this many idle seconds (0: never)")
    parser.add_argument("--send-timeout", type=float, default=defaults.send_timeout_s,
                        help="close a WebSocket session whose client has not taken a reply "
                             "within this many seconds (it stopped reading)")
    parser.add_argument("--batch-window-ms", type=float, default=defaults.batch_window_s * 1e3,
                        help="longest wait for other sessions' world-model calls")
    parser.add_argument("--shutdown-grace", type=float, default=defaults.shutdown_grace_s,
                        help="seconds running steps get to finish on SIGTERM")
    parser.add_argument("--compress", action="store_true",
                        help="compress WebSocket messages (permessage-deflate): less traffic "
                             "between machines, more CPU per step")
    parser.add_argument("--kw", action="append", default=[], metavar="KEY=VALUE|JSON",
                        help="a gym.make keyword argument (repeatable), e.g. "
                             "--kw scenarios=generated --kw reveal_reference=true")
    parser.set_defaults(handler=_serve)


def _settings(args: argparse.Namespace) -> Any:
    from agentworld_envs.backends import parse_backend_arg
    from agentworld_envs.serve.settings import ServeSettings

    try:
        return ServeSettings(
            env_id=args.env_id, host=args.host, port=args.port, max_sessions=args.max_sessions,
            backend=parse_backend_arg(args.backend) if args.backend else None,
            idle_timeout_s=args.idle_timeout or None, send_timeout_s=args.send_timeout,
            batch_window_s=args.batch_window_ms / 1e3,
            shutdown_grace_s=args.shutdown_grace, compress=args.compress,
            env_kwargs=parse_kw(args.kw))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        import uvicorn

        from agentworld_envs.serve.app import build_app
        from agentworld_envs.serve.served_env import ServedEnv
    except ImportError as exc:
        raise UsageError(f"{_HINT} ({exc})") from None
    try:
        served = ServedEnv(settings)  # loads the world model before the port opens
    except (ValueError, TypeError) as exc:  # a --kw or --backend value of the wrong kind
        raise UsageError(str(exc)) from None

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                port = self.servers[0].sockets[0].getsockname()[1]
                print(f"agentworld serve: ready at http://{settings.host}:{port} "
                      f"({settings.env_id}, up to {settings.max_sessions} sessions)",
                      file=sys.stderr, flush=True)

    server = Server(uvicorn.Config(
        build_app(settings, served), host=settings.host, port=settings.port,
        log_level="warning", timeout_graceful_shutdown=settings.shutdown_grace_s,
        ws_per_message_deflate=settings.compress))
    try:
        server.run()  # on SIGTERM / Ctrl-C: graceful shutdown, then the signal is raised again
    finally:
        served.close()  # idempotent; the app's shutdown closed it unless start-up failed
        running = served.stats()["running"]
        if running:  # a step still inside a model call: report it and leave without waiting
            print(f"agentworld serve: {running} reset(s) or step(s) still running after "
                  f"{settings.shutdown_grace_s:g} s; exiting without them", file=sys.stderr,
                  flush=True)
            os._exit(1)
    return 0 if server.started else 1
