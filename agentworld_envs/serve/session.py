"""One OpenEnv session: a Gymnasium env of the served id, played through OpenEnv's interface.

``reset(seed=..., options=...)`` and ``step(TurnAction)`` map one to one onto the env's
``reset`` and ``step``; the observation carries the text, ``reward`` and ``done``, and in its
metadata Gymnasium's ``terminated`` / ``truncated`` split and the env's ``info`` (with the
env's own hidden-field rules). Bad input raises a ``ValueError`` that OpenEnv turns into an
error response for this session alone; an agent's text never raises (the env reads it).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import reprlib
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import ValidationError

from agentworld_envs.backends.cancelling import CallScope
from agentworld_envs.errors import SubEnvError
from agentworld_envs.protocol.reset_options import UnknownResetOptionError
from agentworld_envs.protocol.seeding import draw_seed
from agentworld_envs.serve.schema import EpisodeState, TurnAction, TurnObservation
from agentworld_envs.serve.served_env import ServedEnv

__all__ = ["GymSession"]

_log = logging.getLogger(__name__)

INLINE_CHARS = 65536
"""A step of a non-blocking env with a message up to this long runs on the event loop (no
thread hop); a longer one, a ``call_tool`` step (its arguments are not sized) or any step that
may wait on a model runs in the session's thread."""


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)


def jsonable(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON data (tuples become lists, numpy values numbers, anything else text)."""
    return json.loads(json.dumps(info, default=_plain))


def mcp_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI tool schemas as MCP tool specs: ``name``, ``description``, ``input_schema``."""
    specs = []
    for schema in schemas:
        function = schema.get("function", schema)
        specs.append({"name": function["name"], "description": function.get("description", ""),
                      "input_schema": function.get("parameters", {})})
    return specs


def _seed(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"seed must be a non-negative integer or null, not "
                         f"{reprlib.repr(value)}")
    return value


def _episode_id(value: Any) -> str:
    if value is None or value == "":
        return str(uuid.uuid4())
    if not isinstance(value, str):
        raise ValueError(f"episode_id must be a string or null, not {type(value).__name__}")
    return value


class GymSession(Environment[TurnAction, TurnObservation, EpisodeState]):
    """A session's env, made on first reset (for a task set, one per task played).

    Args:
        served: The server's env ids and shared parts.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: ServedEnv) -> None:
        super().__init__()
        self.served = served
        self._envs: dict[str, gym.Env] = {}
        self._seeded: set[str] = set()
        """The ids whose env has had a seed (its ``np_random`` no longer OS entropy)."""
        self._env: gym.Env | None = None
        self._episode_tools: list[dict[str, Any]] = []
        self._rng, _ = seeding.np_random(None)
        self._state = EpisodeState()
        self._closed: str | None = None
        self._departure = CallScope()
        """Cancelled on close: the session's model calls in flight stop (see
        :class:`~agentworld_envs.serve.served_env.SessionBackend`)."""
        self._guard = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._member = False
        """Whether this session counts as a member of the world model's batches."""
        self._counted = False
        """Whether the server's stats count this session (see :meth:`count_in_stats`)."""
        self.busy = False
        """Whether a reset or step is running (an idle sweep never closes a busy session)."""
        self.last_active = time.monotonic()

    # -- OpenEnv interface -------------------------------------------------------------------

    def reset(self, /, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None, **unknown: Any) -> TurnObservation:
        """Start an episode. ``options`` are the env's (``variant``, ``scenario``) and, for a
        task set, ``task``; without ``task`` the seed picks one.

        A seed also seeds the session's own draws: the task of each later reset without
        ``task``, and the seed of a task's env at its first reset without one. A reset that
        fails leaves the session's episode and its draws as they were.
        """
        if unknown:
            raise ValueError(f"unknown reset argument(s) {reprlib.repr(sorted(unknown))}; reset "
                             "takes seed, episode_id and options")
        seed = _seed(seed)
        episode_id = _episode_id(episode_id)
        options = self._options(options)
        with self._active():
            # the session's draws, on a copy that only a reset that succeeds keeps
            rng = seeding.np_random(seed)[0] if seed is not None else copy.deepcopy(self._rng)
            env_id = self._pick(options.pop("task", None) if self.served.task_set else None, rng)
            env = self._env_for(env_id)
            if seed is None and env_id not in self._seeded:
                seed = draw_seed(rng)
            text, info = self._reset_env(env, seed, options)
            self._seeded.add(env_id)
            if info.get("task_id") and self.served.make_kwargs.get("reveal_reference"):
                from floor_tasks import solution

                info["reference"] = {"solution": solution(info["task_id"], info["variant"])}
            state = EpisodeState(episode_id=episode_id, env_id=env_id)
            tools = mcp_tools(info.get("tools") or [])
            observation = TurnObservation(text=text, tools=tools, done=False, reward=None,
                                          metadata=self._metadata(state, info, False, False))
            self._env, self._state, self._episode_tools, self._rng = env, state, tools, rng
            self._membership(True)
            return observation

    def step(self, action: TurnAction, /, timeout_s: float | None = None,
             **kwargs: Any) -> TurnObservation:
        """Play one assistant turn (a ``call_tool`` action is a turn with that one call);
        ``list_tools`` answers without a step. A step after the episode ended gets the env's
        answer and leaves the episode's state as it ended (OpenEnv leaves this to each env;
        its example envs count such a step)."""
        with self._active():
            return self._step(action)

    def _step(self, action: TurnAction) -> TurnObservation:
        self._check_open()  # closed while this step waited for the session's thread
        if action.type == "list_tools":
            return TurnObservation(tools=self._tools(), done=self._state.done,
                                   metadata={"list_tools": True})
        env = self._env
        if env is None:
            raise ValueError("call reset() before step()")
        message = action.message if action.type == "message" else json.dumps(
            {"name": action.tool_name, "arguments": action.arguments}, ensure_ascii=False)
        state = self._state
        with self.served.stepping():
            text, reward, terminated, truncated, info = env.step(message)
        metadata = self._metadata(state, info, terminated, truncated)
        if state.done:
            return TurnObservation(text=text, done=True, reward=float(reward),
                                   metadata=metadata)
        self.served.count("steps")
        state.step_count += 1
        state.total_reward += float(reward)
        state.terminated, state.truncated = bool(terminated), bool(truncated)
        state.done = state.terminated or state.truncated
        if state.done:
            self._membership(False)
        return TurnObservation(text=text, done=state.done, reward=float(reward),
                               metadata=metadata)

    async def reset_async(self, /, seed: int | None = None, episode_id: str | None = None,
                          options: dict[str, Any] | None = None,
                          **unknown: Any) -> TurnObservation:
        """:meth:`reset` on the event loop: a reset never asks a model."""
        return self.reset(seed=seed, episode_id=episode_id, options=options, **unknown)

    async def step_async(self, action: TurnAction, /, timeout_s: float | None = None,
                         **kwargs: Any) -> TurnObservation:
        """:meth:`step`, on the event loop when it cannot block (an AgentFloor env or a
        ``scripted`` world model, and a short message or ``list_tools``), else in the
        session's own thread. The session is busy from the call on, so that no idle sweep
        closes it while the step waits for the thread."""
        with self._active():
            if not self.served.blocking and (action.type == "list_tools" or (
                    action.type == "message" and len(action.message or "") <= INLINE_CHARS)):
                return self._step(action)
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="agentworld-session")
            return await asyncio.get_running_loop().run_in_executor(self._thread, self._step,
                                                                    action)

    @property
    def state(self) -> EpisodeState:
        """The episode id, steps so far, the id played and how the episode stands (an error
        once the session is closed, as every other message gets)."""
        self._check_open()
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The served id and what a session can do."""
        served = self.served
        kind = ("simulated by a language world model" if served.simulated
                else "deterministic tools and a scripted verifier")
        members = f" ({len(served.env_ids)} tasks; reset options.task or the seed picks one)" \
            if served.task_set else ""
        return EnvironmentMetadata(
            name=served.settings.env_id, version="0",
            description=f"agentworld env {served.settings.env_id}{members}: {kind}. An action "
                        'is one assistant turn, {"message": "..."}; list_tools and call_tool '
                        "actions work too.")

    def close(self) -> None:
        """Close the session's envs and free them (safe to call twice)."""
        self.close_for("the session was closed")

    # -- the server's side -------------------------------------------------------------------

    def count_in_stats(self) -> None:
        """Count this session as opened, and later closed, in the server's stats (the server
        calls it for the sessions it keeps, not for a stateless HTTP request's)."""
        self._counted = True
        self.served.count("sessions_opened")

    def _membership(self, member: bool) -> None:
        """Join or leave the world model's batches (see :meth:`ServedEnv.join`)."""
        with self._guard:
            if self._member == member or (member and self._closed is not None):
                return
            self._member = member
        (self.served.join if member else self.served.leave)()

    def close_for(self, reason: str) -> None:
        """Close with a reason that later messages are answered with."""
        self._membership(False)
        with self._guard:
            if self._closed is not None:
                return
            self._closed = reason
            envs, self._envs, self._env = list(self._envs.values()), {}, None
            thread, self._thread = self._thread, None
        self._departure.cancel()  # a step waiting on the model ends now, its answer unused
        if thread is not None:  # after the step running there, if any
            thread.submit(_close_all, envs)
            thread.shutdown(wait=False)
        else:
            _close_all(envs)
        if self._counted:
            self.served.count("sessions_closed")

    def _check_open(self) -> None:
        if self._closed is not None:
            raise RuntimeError(f"{self._closed}; open a new session")

    def _active(self) -> _Activity:
        self._check_open()
        return _Activity(self)

    def _options(self, options: Any) -> dict[str, Any]:
        """The reset options as a dict of our own; which the env reads, it says itself."""
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise ValueError(f"options must be an object, not {type(options).__name__}")
        task = options.get("task")
        if self.served.task_set and task is not None and not isinstance(task, str):
            raise ValueError(f"reset option 'task' must be a string (or null), not "
                             f"{type(task).__name__}")
        return dict(options)

    def _reset_env(self, env: gym.Env, seed: int | None,
                   options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """``env.reset``, its refusal in the client's words (a refused reset leaves the env's
        episode and ``np_random`` as they were: the envs see to that themselves)."""
        try:
            return env.reset(seed=seed, options=options or None)
        except Exception as exc:
            client_error = self._client_error(exc, options)
            if client_error is None:
                raise
            raise client_error from None

    def _client_error(self, exc: Exception, options: dict[str, Any]) -> BaseException | None:
        """The error to answer a refused reset with, when not the env's own."""
        if isinstance(exc, UnknownResetOptionError):  # the env says which options it reads
            known = (*exc.known, "task") if self.served.task_set else exc.known
            return ValueError(f"unknown reset option(s) "
                              f"{reprlib.repr(sorted(set(options) - set(known)))}; this env "
                              f"reads {', '.join(known)}")
        # a scenario object the domain refused: pydantic's ValidationError, the client's,
        # answered field by field (a SubEnvError, made for a trip between processes, holds
        # the env's own error too)
        cause = exc.__cause__
        if isinstance(exc, SubEnvError) or (isinstance(exc, ValueError)
                                            and isinstance(cause, ValidationError)):
            return cause or exc
        return None

    def _pick(self, task: str | None, rng: np.random.Generator) -> str:
        ids = self.served.env_ids
        if task is not None:
            chosen = task if task in ids else f"AgentFloor/{task}-v0"
            if chosen not in ids:
                raise ValueError(f"task {reprlib.repr(task)} is not in "
                                 f"{self.served.settings.env_id}")
            return chosen
        return ids[int(rng.integers(len(ids)))] if len(ids) > 1 else ids[0]

    def _env_for(self, env_id: str) -> gym.Env:
        env = self._envs.get(env_id)
        if env is None:
            env = self._envs[env_id] = self.served.make(env_id, self._departure)
        return env

    def _tools(self) -> list[dict[str, Any]]:
        if self._env is not None:
            return self._episode_tools
        if not self.served.simulated and not self.served.task_set:
            return mcp_tools(self._env_for(self.served.env_ids[0]).unwrapped.tool_schemas)
        raise ValueError("the tools depend on the episode: call reset() first")

    @staticmethod
    def _metadata(state: EpisodeState, info: dict[str, Any], terminated: bool,
                  truncated: bool) -> dict[str, Any]:
        return {"env_id": state.env_id, "episode_id": state.episode_id,
                "terminated": bool(terminated), "truncated": bool(truncated),
                "info": jsonable(info)}


def _close_all(envs: list[gym.Env]) -> None:
    """Close every env: one that fails is logged, and the others still close."""
    for env in envs:
        try:
            env.close()
        except Exception:  # noqa: BLE001 - no caller waits on a session's close to hear of it
            _log.exception("closing the session's env %s failed", env.spec.id if env.spec
                           else env)


class _Activity:
    """Marks a session busy for the length of a reset or step."""

    __slots__ = ("session",)

    def __init__(self, session: GymSession) -> None:
        self.session = session

    def __enter__(self) -> None:
        self.session.busy = True
        self.session.last_active = time.monotonic()
        self.session.served.count("running")

    def __exit__(self, *exc: object) -> None:
        self.session.served.count("running", -1)
        self.session.busy = False
        self.session.last_active = time.monotonic()
