"""One OpenEnv session: a Gymnasium env of the served id, played through OpenEnv's interface.

``reset(seed=..., options=...)`` and ``step(TurnAction)`` map one to one onto the env's
``reset`` and ``step``; the observation carries the text, ``reward`` and ``done``, and in its
metadata Gymnasium's ``terminated`` / ``truncated`` split and the env's ``info`` (with the
env's own hidden-field rules). Bad input raises a ``ValueError`` that OpenEnv turns into an
error response for this session alone; an agent's text never raises (the env reads it).
"""

from __future__ import annotations

import asyncio
import json
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

from agentworld_envs.serve.schema import EpisodeState, TurnAction, TurnObservation
from agentworld_envs.serve.served_env import ServedEnv

__all__ = ["GymSession"]

_OPTIONS = {"AgentFloor/": ("variant",), "AgentWorld/": ("scenario",)}
"""The reset options each family of envs reads."""
INLINE_CHARS = 65536
"""A step of a non-blocking env with a message up to this long runs on the event loop (no
thread hop); a longer one, or any step that may wait on a model, runs in the session's thread."""


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
        raise ValueError(f"seed must be a non-negative integer or null, not {value!r}")
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
        self._env: gym.Env | None = None
        self._episode_tools: list[dict[str, Any]] = []
        self._rng, _ = seeding.np_random(None)
        self._state = EpisodeState()
        self._closed: str | None = None
        self._guard = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._member = False
        """Whether this session counts as a member of the world model's batches."""
        self.busy = False
        """Whether a reset or step is running (an idle sweep never closes a busy session)."""
        self.last_active = time.monotonic()
        served.count("sessions_opened")

    # -- OpenEnv interface -------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              options: dict[str, Any] | None = None, **unknown: Any) -> TurnObservation:
        """Start an episode. ``options`` are the env's (``variant``, ``scenario``) and, for a
        task set, ``task``; without ``task`` the seed picks one."""
        if unknown:
            raise ValueError(f"unknown reset argument(s) {sorted(unknown)}; reset takes seed, "
                             "episode_id and options")
        seed = _seed(seed)
        options = self._options(options)
        with self._active():
            env_id = self._pick(options.pop("task", None), seed)
            env = self._env_for(env_id)
            text, info = env.reset(seed=seed, options=options or None)
            self._env = env
            if info.get("task_id") and self.served.make_kwargs.get("reveal_reference"):
                from floor_tasks import solution

                info["reference"] = {"solution": solution(info["task_id"], info["variant"])}
            self._state = EpisodeState(episode_id=episode_id or str(uuid.uuid4()),
                                       env_id=env_id)
            self._membership(True)
            self._episode_tools = mcp_tools(info.get("tools") or [])
            return TurnObservation(text=text, tools=self._episode_tools,
                                   done=False, reward=None,
                                   metadata=self._metadata(info, False, False))

    def step(self, action: TurnAction, timeout_s: float | None = None,
             **kwargs: Any) -> TurnObservation:
        """Play one assistant turn (a ``call_tool`` action is a turn with that one call);
        ``list_tools`` answers without a step."""
        with self._active():
            if action.type == "list_tools":
                return TurnObservation(tools=self._tools(), done=self._state.done,
                                       metadata={"list_tools": True})
            if self._env is None:
                raise ValueError("call reset() before step()")
            message = action.message if action.type == "message" else json.dumps(
                {"name": action.tool_name, "arguments": action.arguments}, ensure_ascii=False)
            with self.served.stepping():
                text, reward, terminated, truncated, info = self._env.step(message)
            self.served.count("steps")
            state = self._state
            state.step_count += 1
            state.total_reward += float(reward)
            state.terminated, state.truncated = bool(terminated), bool(truncated)
            state.done = state.terminated or state.truncated
            if state.done:
                self._membership(False)
            return TurnObservation(text=text, done=state.done, reward=float(reward),
                                   metadata=self._metadata(info, terminated, truncated))

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                          options: dict[str, Any] | None = None,
                          **unknown: Any) -> TurnObservation:
        """:meth:`reset` on the event loop: a reset never asks a model."""
        return self.reset(seed=seed, episode_id=episode_id, options=options, **unknown)

    async def step_async(self, action: TurnAction, timeout_s: float | None = None,
                         **kwargs: Any) -> TurnObservation:
        """:meth:`step`, on the event loop when it cannot block (an AgentFloor env, a
        ``scripted`` world model, a short message), else in the session's own thread."""
        if not self.served.blocking and len(action.message or "") <= INLINE_CHARS:
            return self.step(action)
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="agentworld-session")
        return await asyncio.get_running_loop().run_in_executor(self._thread, self.step, action)

    @property
    def state(self) -> EpisodeState:
        """The episode id, steps so far, the id played and how the episode stands."""
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
        if thread is not None:  # after the step running there, if any
            thread.submit(_close_all, envs)
            thread.shutdown(wait=False)
        else:
            _close_all(envs)
        self.served.count("sessions_closed")

    def _active(self) -> _Activity:
        if self._closed is not None:
            raise RuntimeError(f"{self._closed}; open a new session")
        return _Activity(self)

    def _options(self, options: Any) -> dict[str, Any]:
        if options is None:
            return {}
        if not isinstance(options, dict):
            raise ValueError(f"options must be an object, not {type(options).__name__}")
        known = _OPTIONS[self.served.env_ids[0].split("/")[0] + "/"]
        known = (*known, "task") if self.served.task_set else known
        unknown = set(options) - set(known)
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; this env reads "
                             f"{', '.join(known)}")
        return dict(options)

    def _pick(self, task: Any, seed: int | None) -> str:
        ids = self.served.env_ids
        if task is not None:
            chosen = task if isinstance(task, str) and task in ids else f"AgentFloor/{task}-v0"
            if chosen not in ids:
                raise ValueError(f"task {task!r} is not in {self.served.settings.env_id}")
            return chosen
        if seed is not None:
            self._rng, _ = seeding.np_random(seed)
        return ids[int(self._rng.integers(len(ids)))] if len(ids) > 1 else ids[0]

    def _env_for(self, env_id: str) -> gym.Env:
        env = self._envs.get(env_id)
        if env is None:
            env = self._envs[env_id] = self.served.make(env_id)
        return env

    def _tools(self) -> list[dict[str, Any]]:
        if self._env is not None:
            return self._episode_tools
        if not self.served.simulated and not self.served.task_set:
            return mcp_tools(self._env_for(self.served.env_ids[0]).unwrapped.tool_schemas)
        raise ValueError("the tools depend on the episode: call reset() first")

    def _metadata(self, info: dict[str, Any], terminated: bool,
                  truncated: bool) -> dict[str, Any]:
        return {"env_id": self._state.env_id, "episode_id": self._state.episode_id,
                "terminated": bool(terminated), "truncated": bool(truncated),
                "info": jsonable(info)}


def _close_all(envs: list[gym.Env]) -> None:
    for env in envs:
        env.close()


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
