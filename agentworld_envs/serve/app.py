"""The OpenEnv app of one served id: OpenEnv's own server, routes and protocol, with our sessions.

:func:`build_app` builds OpenEnv's ``HTTPEnvServer`` (HTTP ``/reset`` ``/step`` ``/state``
``/schema`` ``/metadata`` ``/health``, sessions capped at ``max_sessions``, over the cap
OpenEnv's capacity error at once) on a factory of
:class:`~agentworld_envs.serve.session.GymSession`, and adds ``GET /agentworld/stats``.

The WebSocket sessions at ``/ws`` are served by our own loop, registered ahead of OpenEnv's:
OpenEnv's messages (``reset``, ``step``, ``state``, ``close``) and its replies and error shapes,
one message at a time, except that no frame a client sends ends its session. A binary frame,
text that is not JSON or is past the parser's limits (a number of over 4300 digits), JSON nested
more than ``MAX_DEPTH`` levels deep, or JSON that is not an object is answered with OpenEnv's
``INVALID_JSON`` error, and the session goes on. Frames are read (up to ``READ_AHEAD``) while
one is answered, so a client that leaves in the middle of a step frees its session at once, also
when it sent more first (OpenEnv's client sends ``close`` before it closes its socket): its
model calls in flight are cancelled (its own alone: other sessions' calls on the shared model go
on), the step ends in the session's thread, its envs close after it, and the frames after it go
unanswered.
A client that takes no frame for ``send_timeout_s`` (it stopped reading, so its socket's
buffers are full) has its session closed and freed at once and its socket closed with code 1008
(uvicorn then frees the connection once the client reads or leaves).
A string of a reply that UTF-8 cannot carry (a lone surrogate) goes as its JSON escape, over
HTTP too, where a number that JSON cannot carry (NaN, infinity) goes as null, so a 422 quoting
a client's ``{"seed": NaN}`` names the field rather than failing. An error message over
``MESSAGE_CHARS`` (one quoting a client's huge value) has its middle cut.
Over HTTP, a body over ``MAX_BODY_BYTES`` gets a 413 (no more of it is read), a JSON body nested
more than ``MAX_DEPTH`` levels deep a 400, a malformed action on ``/step`` OpenEnv's 422 (also
one whose ``type`` is not a string, on which OpenEnv's route fails with a 500), and a
``session_id`` param on ``/mcp`` that is not a string an ``INVALID_PARAMS`` error (where
OpenEnv's route fails with a 500 too).
Deviations: OpenEnv's MCP transport (the ``mcp`` message and ``?session_id=`` on ``/ws``, HTTP
MCP sessions on ``/mcp``) is not served, as these envs have no MCP server (OpenEnv answers
their tool calls "Environment does not support MCP"): ``mcp`` is answered with an
``UNKNOWN_TYPE`` error naming the ``list_tools`` and ``call_tool`` step actions,
``?session_id=`` with a ``SESSION_ERROR``, and ``openenv/session/create`` on ``POST /mcp``
with a ``METHOD_NOT_FOUND`` error (such a session could serve nothing here, and held a slot
until the idle sweep, or for ever without one); the other requests to ``/mcp`` get OpenEnv's
answers.

Idle sessions are closed by our own sweep rather than OpenEnv's reaper, because OpenEnv counts
a session's activity only when a message is answered: its reaper would close a session in the
middle of a step that thinks for longer than the timeout. Ours never closes a session whose
reset or step is running, and checks each session again just before closing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.utils import is_body_allowed_for_status_code
from openenv.core.env_server.exceptions import EnvironmentFactoryError, SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcRequest, JsonRpcResponse
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    ConcurrencyConfig,
    StepRequest,
    WSCloseMessage,
    WSErrorCode,
    WSErrorResponse,
    WSObservationResponse,
    WSResetMessage,
    WSStateMessage,
    WSStateResponse,
    WSStepMessage,
)
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError
from starlette.exceptions import HTTPException
from starlette.types import Message

from agentworld_envs.protocol.bounded_json import MAX_DEPTH, depth
from agentworld_envs.serve.schema import EpisodeState, TurnAction, TurnObservation
from agentworld_envs.serve.served_env import ServedEnv
from agentworld_envs.serve.session import GymSession
from agentworld_envs.serve.settings import ServeSettings

__all__ = ["build_app"]

_log = logging.getLogger(__name__)

_TOOL_STEPS = ('list the tools with {"type": "step", "data": {"type": "list_tools"}} and call '
               'one with {"type": "step", "data": {"type": "call_tool", "tool_name": ..., '
               '"arguments": {...}}}')
_NO_MCP = f'this server has no MCP server, so "mcp" messages are not served: {_TOOL_STEPS}'
_NO_MCP_SESSION = ("this server has no MCP server, so it opens no HTTP MCP session "
                   "(openenv/session/create): open a WebSocket session at /ws and "
                   f"{_TOOL_STEPS}")
_NO_ATTACH = ("this server does not attach a WebSocket to an HTTP MCP session (?session_id=): "
              "connect without it for a session of your own")

READ_AHEAD = 8
"""Frames a session reads ahead while it answers one: past them the client waits (its frames
stay in the socket), so a session's memory is bounded, and a client that leaves with more
unanswered is seen to leave once they are answered."""

MESSAGE_CHARS = 1000
"""The longest error message sent, in characters: an env's refusal may quote a client's value
(a megabyte of variant or scenario id) whole."""

MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest HTTP request body read (as large as uvicorn lets a WebSocket message be): past it
the request gets a 413 and no more is read, rather than taking the server's memory."""

_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
"""Why a client's JSON is refused when it nests deeper than the project's bound for untrusted
JSON: a reply quoting it (a validation error) could not be encoded by pydantic (255 levels), or,
near the interpreter's recursion limit, at all."""

_JSON_KINDS = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
"""What a JSON value is called, by its Python type (numbers aside)."""


def _parse(text: str | bytes) -> Any:
    """A client's JSON.

    Raises:
        ValueError: saying why it is refused: not JSON (a ``JSONDecodeError``), not UTF-8, a
            number of over 4300 digits, or nested more than ``MAX_DEPTH`` levels deep.
    """
    try:
        value = json.loads(text)
    except RecursionError:  # past the parser's own limit
        raise ValueError(_TOO_DEEP) from None
    opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    # too few brackets to nest that deep is the common case, with no walk
    if sum(map(text.count, opening)) > MAX_DEPTH and depth(value) > MAX_DEPTH:
        raise ValueError(_TOO_DEEP)
    return value


def _json_text(content: Any) -> str:
    """``content`` as JSON, whatever it holds: a string that UTF-8 cannot carry (a lone
    surrogate, also in a key) as its JSON escape, a number that JSON cannot (NaN, infinity) as
    null, and any other value JSON has no type for (an exception in an error's context) as its
    text."""
    escaped = json.dumps(content, default=str)  # NaN and infinities are read back as None
    return json.dumps(json.loads(escaped, parse_constant=lambda _: None), separators=(",", ":"))


def _reply(message: BaseModel) -> str:
    """A reply frame's text. A lone surrogate (an env that reads the JSON escape ``\\ud800`` in
    an agent's tool call echoes one) is sent as that escape, so the client reads back the very
    string the env returned (see :func:`_json_text`)."""
    try:
        return message.model_dump_json()
    except PydanticSerializationError:
        return _json_text(message.model_dump())


class _SafeJSONResponse(JSONResponse):
    """An HTTP reply as JSON, whatever it holds (see :func:`_json_text`: a client's NaN, quoted in
    its 422, goes as null), as the WebSocket replies have it."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except (TypeError, ValueError):
            return _json_text(content).encode()


class _ClientJSONRequest(Request):
    """A request whose body is over ``MAX_BODY_BYTES`` gets a 413, and one whose JSON body
    :func:`_parse` refuses a 400 saying why (FastAPI's 422 for text that is not JSON aside)."""

    async def body(self) -> bytes:
        if not hasattr(self, "_body"):  # Starlette's cache, which stream() reads too
            chunks, size = [], 0
            async for chunk in self.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise HTTPException(413, f"the request body is over {MAX_BODY_BYTES} bytes, "
                                        "the most this server reads")
                chunks.append(chunk)
            self._body = b"".join(chunks)
        return self._body

    async def json(self) -> Any:
        try:
            return _parse(await self.body())
        except json.JSONDecodeError:
            raise
        except ValueError as exc:
            raise HTTPException(400, f"Invalid JSON body: {exc}") from None


class _Route(APIRoute):
    """An HTTP route whose request is a :class:`_ClientJSONRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_client_json(request: Request) -> Response:
            return await handle(_ClientJSONRequest(request.scope, request.receive))

        return handle_client_json


def _shortened(message: str) -> str:
    """``message`` with its middle cut to keep ``MESSAGE_CHARS`` (the quoted value is cut, the
    cause at the start and the hint at the end are kept)."""
    cut = len(message) - MESSAGE_CHARS
    if cut <= 0:
        return message
    head = MESSAGE_CHARS * 2 // 3
    return f"{message[:head]}...({cut} characters cut)...{message[head + cut:]}"


def _error(code: WSErrorCode, message: str, **details: Any) -> str:
    """An error frame of OpenEnv's shape."""
    return _reply(WSErrorResponse(data={"message": _shortened(message), "code": code,
                                        **details}))


async def _read(websocket: WebSocket, frames: asyncio.Queue[Message | None],
                room: asyncio.Semaphore) -> None:
    """Queue the client's frames, then None once it has left; with ``READ_AHEAD`` frames not
    yet taken, wait for ``room``."""
    try:
        while (frame := await websocket.receive())["type"] != "websocket.disconnect":
            await room.acquire()
            frames.put_nowait(frame)
    finally:
        frames.put_nowait(None)


class _StoppedReading(Exception):
    """The client has not taken a frame within the send timeout (its socket's buffers are
    full): its session ends."""


def _idle(session: Environment | None, limit: float) -> bool:
    """Whether a session has no reset or step running and none since ``limit``."""
    return isinstance(session, GymSession) and not session.busy and session.last_active < limit


class _Server(HTTPEnvServer):
    """OpenEnv's server with our WebSocket loop and an idle sweep that spares running steps."""

    def __init__(self, served: ServedEnv) -> None:
        settings = served.settings
        super().__init__(functools.partial(GymSession, served), TurnAction, TurnObservation,
                         concurrency_config=ConcurrencyConfig(
                             max_concurrent_envs=settings.max_sessions, session_timeout=None),
                         env_name=settings.env_id, state_cls=EpisodeState)
        self.idle_timeout_s = settings.idle_timeout_s
        self.send_timeout_s = settings.send_timeout_s
        self._sweeper: asyncio.Task[None] | None = None

    async def _create_session(self) -> tuple[str, Environment]:
        """OpenEnv's session, counted in the stats (a stateless HTTP request's env is not)."""
        session_id, session = await super()._create_session()
        cast(GymSession, session).count_in_stats()
        return session_id, session

    # -- WebSocket sessions ------------------------------------------------------------------

    async def serve_socket(self, websocket: WebSocket) -> None:
        """One WebSocket session, from the connection until ``close`` or the client leaves."""
        await websocket.accept()
        session_id: str | None = None
        reader: asyncio.Future[None] | None = None
        answering: asyncio.Future[str | None] | None = None
        close_code, close_reason = 1000, ""
        try:
            if websocket.query_params.get("session_id"):
                await self._deliver(websocket.send_text(_error(WSErrorCode.SESSION_ERROR,
                                                               _NO_ATTACH)))
                return
            try:
                session_id, session = await self._create_session()
            except SessionCapacityError as exc:
                await self._deliver(websocket.send_text(_error(
                    WSErrorCode.CAPACITY_REACHED, str(exc), active_sessions=exc.active_sessions,
                    max_sessions=exc.max_sessions)))
                return
            except EnvironmentFactoryError as exc:
                await self._deliver(websocket.send_text(_error(
                    WSErrorCode.FACTORY_ERROR, str(exc), factory_name=exc.factory_name)))
                return
            # frames are read while one is answered, so that a client leaving mid-step (even
            # after sending more, such as OpenEnv's client's "close") frees its session at once
            frames: asyncio.Queue[Message | None] = asyncio.Queue()
            room = asyncio.Semaphore(READ_AHEAD)
            reader = asyncio.ensure_future(_read(websocket, frames, room))
            while (frame := await frames.get()) is not None:
                room.release()
                answering = asyncio.ensure_future(
                    self._answer(session_id, cast(GymSession, session), frame))
                try:
                    await asyncio.wait((answering, reader), return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    answering.cancel()
                    raise
                if not answering.done():
                    break  # the client left: the step ends in the session's thread
                reply = await answering
                if reply is None:
                    break
                await self._deliver(websocket.send_text(reply))
            if reader.done():
                reader.result()  # a socket that failed rather than closed is logged below
        except WebSocketDisconnect:
            pass
        except _StoppedReading as exc:
            _log.warning("WebSocket session %s closed: %s", session_id, exc)
            close_code, close_reason = 1008, str(exc)  # policy violation
        except Exception as exc:  # noqa: BLE001 - the socket failed: this session ends alone
            _log.warning("WebSocket session %s failed: %s", session_id, exc)
            with contextlib.suppress(Exception):
                await self._deliver(websocket.send_text(_error(WSErrorCode.SESSION_ERROR,
                                                               str(exc))))
        finally:
            if reader is not None:
                reader.cancel()
            if session_id is not None:
                await self._destroy_session(session_id)
            with contextlib.suppress(RuntimeError, WebSocketDisconnect, _StoppedReading):
                await self._deliver(websocket.close(close_code, close_reason))
            if answering is not None:
                await answering  # a step its client left goes on to its end, then its envs close

    async def _deliver(self, sending: Coroutine[Any, Any, None]) -> None:
        """Send a frame (a reply, an error, the close frame) within ``send_timeout_s``.

        Raises:
            _StoppedReading: when the client took nothing for that long.
        """
        try:
            await asyncio.wait_for(sending, self.send_timeout_s)
        except asyncio.TimeoutError:
            raise _StoppedReading(f"the client took no reply for {self.send_timeout_s:g} s "
                                  "(it stopped reading)") from None

    async def _answer(self, session_id: str, session: GymSession, frame: Message) -> str | None:
        """The reply to one frame (None for ``close``); whatever the frame, it never raises."""
        text = frame.get("text")
        if text is None:
            return _error(WSErrorCode.INVALID_JSON,
                          "Invalid JSON: a binary frame; send each message as a text frame")
        try:
            message = _parse(text)
        except ValueError as exc:
            return _error(WSErrorCode.INVALID_JSON, f"Invalid JSON: {exc}")
        if not isinstance(message, dict):
            return _error(WSErrorCode.INVALID_JSON, 'Invalid JSON: a message is an object with '
                          f'a "type", not {_JSON_KINDS.get(type(message), "a number")}')
        kind = message.get("type", "")
        try:
            if kind == "reset":
                data = WSResetMessage.model_validate(message).data
                observation = await session.reset_async(**data)
                self._update_session_activity(session_id)
                return _reply(WSObservationResponse(data=serialize_observation(observation)))
            if kind == "step":
                action = self.action_cls.model_validate(
                    WSStepMessage.model_validate(message).data)
                observation = await session.step_async(action)
                self._update_session_activity(session_id, increment_step=True)
                return _reply(WSObservationResponse(data=serialize_observation(observation)))
            if kind == "state":
                WSStateMessage.model_validate(message)
                return _reply(WSStateResponse(data=session.state.model_dump()))
            if kind == "close":
                WSCloseMessage.model_validate(message)
                return None
            return _error(WSErrorCode.UNKNOWN_TYPE,
                          _NO_MCP if kind == "mcp" else f"Unknown message type: {str(kind)[:100]}")
        except ValidationError as exc:
            return _error(WSErrorCode.VALIDATION_ERROR, "Invalid message", errors=exc.errors())
        except Exception as exc:  # noqa: BLE001 - bad input or the env's error: this message's
            return _error(WSErrorCode.EXECUTION_ERROR, str(exc))

    # -- the idle sweep ----------------------------------------------------------------------

    def idle_sessions(self) -> list[str]:
        """Sessions with no reset or step running and none for longer than the timeout."""
        limit = time.monotonic() - self.idle_timeout_s
        return [sid for sid, env in list(self._sessions.items()) if _idle(env, limit)]

    async def _sweep(self) -> None:
        interval = min(max(self.idle_timeout_s / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            for sid in self.idle_sessions():
                try:
                    await self._close_idle(sid)
                except Exception:  # noqa: BLE001 - the sweep must go on
                    _log.exception("closing idle session %s failed", sid)

    async def _close_idle(self, sid: str) -> None:
        """Close a session found idle, unless it was active since (closing another is awaited
        between the two)."""
        session = self._sessions.get(sid)
        if not _idle(session, time.monotonic() - self.idle_timeout_s):
            return
        try:
            cast(GymSession, session).close_for(
                f"the session was idle for more than {self.idle_timeout_s:g} s and was closed")
        finally:
            await self._destroy_session(sid)

    def start_sweep(self) -> None:
        """Start the idle sweep (on the app's start-up), when a timeout is set."""
        if self.idle_timeout_s is not None and self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    def stop_sweep(self) -> None:
        """Stop the idle sweep."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None


def _openenv_post(app: FastAPI, path: str) -> Callable[..., Any]:
    """OpenEnv's endpoint of ``POST path``."""
    return next(route.endpoint for route in app.router.routes
                if isinstance(route, APIRoute) and route.path == path)


def _post_ahead(app: FastAPI, path: str, endpoint: Callable[..., Any]) -> None:
    """Serve ``POST path`` with ``endpoint``, matched before OpenEnv's route, its replies sent
    as the app's own (whatever they quote)."""
    app.router.routes.insert(0, _Route(path, endpoint, methods=["POST"],
                                       include_in_schema=False,
                                       response_class=_SafeJSONResponse))


def _refuse_mcp_sessions(app: FastAPI) -> None:
    """Answer ``openenv/session/create`` on ``POST /mcp`` with an error, and a ``session_id``
    param that is not a string (OpenEnv's route failed on it with a 500) with an error naming
    it, ahead of OpenEnv's route, which still answers every other request."""
    openenv_mcp = _openenv_post(app, "/mcp")

    async def mcp(request: Request) -> dict[str, Any]:
        # not JSON-RPC: OpenEnv's route says what's wrong
        with contextlib.suppress(ValueError, RecursionError):
            rpc = JsonRpcRequest.model_validate(json.loads(await request.body()))
            if rpc.method == "openenv/session/create":
                return JsonRpcResponse.error_response(
                    JsonRpcErrorCode.METHOD_NOT_FOUND, _NO_MCP_SESSION,
                    request_id=rpc.id).model_dump()
            if not isinstance(rpc.params.get("session_id"), str | None):
                return JsonRpcResponse.error_response(
                    JsonRpcErrorCode.INVALID_PARAMS, "Invalid params - 'session_id' must be a "
                    "string", request_id=rpc.id).model_dump()
        return await openenv_mcp(request)

    _post_ahead(app, "/mcp", mcp)


def _refuse_malformed_actions(app: FastAPI) -> None:
    """Answer ``POST /step`` with an action whose ``type`` is not a string with OpenEnv's 422,
    ahead of OpenEnv's route, which failed on it with a 500 (and validates every other action
    itself, with the same 422)."""
    openenv_step = _openenv_post(app, "/step")

    async def step(request: StepRequest) -> Any:
        if not isinstance(request.action.get("type", ""), str):
            try:
                TurnAction.model_validate(request.action)
            except ValidationError as exc:
                raise HTTPException(422, detail=exc.errors()) from None
        return await openenv_step(request)

    _post_ahead(app, "/step", step)


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
                  description="An agentworld env served over OpenEnv's protocol.",
                  default_response_class=_SafeJSONResponse)
    app.router.route_class = _Route  # OpenEnv's routes too
    app.add_api_websocket_route("/ws", server.serve_socket)  # matched before OpenEnv's /ws
    server.register_routes(app)
    _refuse_mcp_sessions(app)
    _refuse_malformed_actions(app)

    @app.exception_handler(ValueError)
    async def bad_request(request: Request, exc: ValueError) -> JSONResponse:
        """Bad input to the stateless HTTP routes (a bad seed, a step with no reset) is the
        client's error, 400 with the reason, not a server error."""
        return _SafeJSONResponse(status_code=400, content={"detail": _shortened(str(exc))})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        """FastAPI's 422, sent whatever input the errors quote (``{"seed": NaN}``)."""
        return _SafeJSONResponse(status_code=422,
                                 content={"detail": jsonable_encoder(exc.errors())})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        """FastAPI's answer to an ``HTTPException`` (OpenEnv's 422 for a bad action among
        them), sent whatever input its detail quotes."""
        if not is_body_allowed_for_status_code(exc.status_code):
            return Response(status_code=exc.status_code, headers=exc.headers)
        return _SafeJSONResponse({"detail": exc.detail}, status_code=exc.status_code,
                                 headers=exc.headers)

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
