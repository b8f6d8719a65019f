"""Our envs as TRL environments: ``GRPOTrainer(environment_factory=environment_class(env_id))``.

:func:`environment_class` builds, from any env id (``AgentFloor/<ID>-v0``,
``AgentWorld/<Domain>-v0``), a class TRL can instantiate: ``reset(**row)`` resets the env from
a dataset row and returns the task prompt, and one method per tool (from the env's tool
schemas; ``act(action)`` for domains whose actions are not tool calls) plays that call as one
``env.step``. :func:`environment_reward` is the matching reward function: it plays the final
answer and returns the verifier's (or simulated env's) reward.

What this adapter cannot keep (TRL runs the tool loop): TRL steps the env once per tool call,
so a turn with several calls spends several steps of the budget; TRL answers unknown tool names
itself, so the hallucinated-tool label never fires; and TRL parses the calls, so only the chat
template's tool-call format reaches the env. :mod:`agentworld_envs.trl.rollout` keeps them all.

Bad input: arguments the model sends are played and labelled by the env (a wrong type, a
missing or extra argument, text past the env's size limits, ``NaN`` or ``Infinity``, which
reach the env as the JSON text a model would write). A tool method called from Python with a
value JSON cannot carry (bytes, a set, an object, a cycle, an int past Python's 4300-digit
limit) raises a ``TypeError`` or ``ValueError`` naming the tool and the argument; TRL hands
such an error to the model as ``{"error": ...}``, with no step spent.

Backend faults: TRL's tool loop hands *every* exception of a tool method to the model as a tool
error, so an ``env.step`` that raises (a world model that failed under ``on_fault="raise"``, past
``max_faults``, any env error) would be swallowed and its episode scored. The session ends at
that step instead (no further step) and :func:`environment_reward` raises the env's exception.
A vector env's sub-env whose step raised (``RayVectorEnv``: a truncated step with
``info["fault"]``) ends its session the same way, with a ``RuntimeError`` naming the fault.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, ClassVar

from agentworld_envs.protocol.chat import Completion
from agentworld_envs.trl.tool_methods import act_method, tool_method

__all__ = ["EnvSession", "environment_class", "environment_reward", "import_trl", "make_env",
           "ENDED"]

_HINT = 'the TRL adapters need trl: pip install "agentworld[train]"'
ENDED = "The episode has ended; no more actions are taken."
_RESET_OPTION_KEYS = ("variant", "scenario")


def import_trl() -> Any:
    """Import ``trl`` (and its chat-template helpers), or say how to install it."""
    try:
        trl = importlib.import_module("trl")
        importlib.import_module("trl.chat_template_utils")
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return trl


def make_env(env_id: str, make_kwargs: dict[str, Any]) -> Any:
    """``gym.make(env_id, **make_kwargs)``, registering the AgentFloor envs first if needed.

    An ``AgentWorld`` env given ``max_episode_steps`` (and no ``max_steps``) gets it as its own
    budget too: ``gym.make`` gives it to the ``TimeLimit`` only, which would cut the episode
    before the env gives its verdict. (AgentFloor envs sync their budget themselves.)"""
    import gymnasium as gym

    if env_id.startswith("AgentFloor/"):
        importlib.import_module("floor_tasks")  # registers AgentFloor/<ID>-v0
    if env_id.startswith("AgentWorld/") and make_kwargs.get("max_episode_steps") is not None:
        make_kwargs = {"max_steps": make_kwargs["max_episode_steps"], **make_kwargs}
    return gym.make(env_id, **make_kwargs)


class EnvSession:
    """One env played by TRL: reset from a dataset row, stepped by the adapter.

    Subclasses made by :func:`environment_class` set :attr:`env_id` and :attr:`make_kwargs`.
    Only ``reset`` and the tool methods are public: TRL exposes every other public method as a
    tool.

    Attributes:
        env: The Gymnasium env.
        actions: The action strings played since the last reset, one per ``env.step``.
        tools: The tool schemas of the current episode (from the reset info).
        done: Whether the episode has ended.
        reward: The episode's reward (0.0 until it ends).
        last_info: The info of the last reset or step.
        fault: The exception ``env.step`` raised in this episode (which ended it), or None.
        cut_short: Whether the rollout that played the episode left it unfinished
            (:class:`~agentworld_envs.trl.rollout.TurnRollout`, out of context): it gets no
            further step, and no verdict.
    """

    env_id: ClassVar[str]
    make_kwargs: ClassVar[dict[str, Any]] = {}
    fault: Exception | None = None
    cut_short: bool = False

    def __init__(self, env: Any = None) -> None:
        """Play ``env`` (a vector env's slot), else a new env of :attr:`env_id`."""
        self.env = env if env is not None else make_env(self.env_id, dict(self.make_kwargs))
        self.actions: list[str] = []
        self.tools: list[dict[str, Any]] = []
        self.done, self.reward = True, 0.0
        self.last_info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str:
        """Reset the env from a dataset row and return the task prompt.

        The row's ``seed`` seeds the reset; its ``variant`` (AgentFloor) or ``scenario``
        (AgentWorld) and the entries of its ``options`` dict become reset options. Other
        columns (``prompt``, ...) are ignored.
        """
        if not isinstance(row.get("options") or {}, dict):
            raise TypeError(f"a row's options must be a dict of reset options, not "
                            f"{type(row['options']).__name__}")
        options = dict(row.get("options") or {})
        options.update({k: row[k] for k in _RESET_OPTION_KEYS if row.get(k) is not None})
        observation, info = self.env.reset(seed=row.get("seed"), options=options or None)
        self.actions, self.tools = [], list(info.get("tools") or [])
        self.done, self.reward, self.last_info, self.fault = False, 0.0, info, None
        self.cut_short = False
        return observation

    def _step(self, action: str) -> str:
        """Play one action as one ``env.step``; return the observation.

        Raises:
            Exception: whatever ``env.step`` raised; the episode ends there (:attr:`fault`).
            RuntimeError: the step's info holds a ``fault`` (a vector env's sub-env whose
                step raised: ``FaultGuard``, ``RayVectorEnv``), which ends it likewise.
        """
        if self.done:
            return ENDED
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
            if info.get("fault"):
                raise RuntimeError(f"the env's step failed: {info['fault']}")
        except Exception as exc:
            self.done, self.fault = True, exc
            raise
        self.actions.append(action)
        self.done, self.reward, self.last_info = terminated or truncated, float(reward), info
        if self.done:
            observation = f"{observation}\n{ENDED}".lstrip("\n")
        return observation

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Play ``{"name", "arguments"}`` as one step.

        Raises:
            TypeError, ValueError: an argument JSON cannot carry (see the module docstring).
        """
        try:
            action = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            bad = next(key for key, value in arguments.items() if not _json_writable(value))
            raise type(exc)(f"{name}(): argument {bad!r} cannot be sent as JSON ({exc}); pass "
                            f"str, int, float, bool, None, or lists and dicts of them") from None
        return self._step(action)

    def _finish(self, final_text: str | None) -> float:
        """Play the final answer if the episode is still open (its reasoning removed, as the
        harness plays a reply: ``Completion.to_action``); return the episode's reward.

        An episode still open afterwards (no final text, text that was a broken tool call, or
        an episode :attr:`cut_short`, whose completion holds turns already played) has no
        verdict and scores 0.0.
        """
        if not self.done and not self.cut_short and final_text is not None:
            self._step(Completion(text=final_text).to_action())
        return self.reward if self.done else 0.0


def _json_writable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _probe_tools(env_id: str, make_kwargs: dict[str, Any],
                 probe_row: dict[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """The tools of the probe row's episode, and the names a session already uses."""
    session = type("_Probe", (EnvSession,), {"env_id": env_id, "make_kwargs": make_kwargs})()
    try:
        session.reset(**probe_row)
        return session.tools, set(dir(session))
    finally:
        session.env.close()


def _class_name(env_id: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in env_id.replace("-v0", "")) + "Env"


def environment_class(env_id: str, *, probe_row: dict[str, Any] | None = None,
                      **make_kwargs: Any) -> type[EnvSession]:
    """A TRL environment class for an env id, with one method per tool.

    Args:
        env_id: E.g. ``"AgentFloor/B3-v0"`` or ``"AgentWorld/Search-v0"``.
        probe_row: The row of the reset that reads the tool schemas (``{"seed": 0}`` by
            default). Envs whose tools depend on the scenario need one class per tool set:
            MCP, and ``AgentWorld/Floor-v0``, whose seeds pick AgentFloor tasks with their own
            tools. Pass ``{"scenario": ...}`` here and in the dataset rows, and route rows with
            TRL's dict ``environment_factory``.
        **make_kwargs: Passed to ``gym.make`` (e.g. ``max_episode_steps``, ``backend``).

    Returns:
        A class for ``GRPOTrainer(environment_factory=...)``; pair it with
        ``reward_funcs=[environment_reward]``. Its instances raise if a reset's tools differ
        from the ones it was built with.

    Raises:
        ValueError: a tool is named like an :class:`EnvSession` attribute (``env``, ``done``,
            ``reward``, ...), or like TRL's ``reset`` and ``get_reward``.
    """
    tools, taken = _probe_tools(env_id, make_kwargs, probe_row or {"seed": 0})
    names = [t["function"]["name"] for t in tools]
    if tools:
        methods = {name: tool_method(t, EnvSession._call_tool) for name, t in zip(names, tools,
                                                                                     strict=True)}
        shadowed = sorted(taken.intersection(names))
        if shadowed:
            raise ValueError(f"{env_id} has tools named {shadowed}, which EnvSession uses for its "
                             f"own state (env, tools, done, reward, ...); TRL could not call them")
    else:
        methods = {"act": act_method(f"Take one action in {env_id}.", EnvSession._step)}

    def reset(self: EnvSession, **row: Any) -> str:
        observation = EnvSession.reset(self, **row)
        offered = [t["function"]["name"] for t in self.tools]
        if offered != names:
            raise ValueError(f"{env_id} offers tools {offered} in this episode but the class was "
                             f"built for {names}; build one class per tool set (probe_row)")
        return observation

    reset.__doc__ = EnvSession.reset.__doc__
    return type(_class_name(env_id), (EnvSession,), {
        "env_id": env_id, "make_kwargs": dict(make_kwargs), "reset": reset, **methods})


def _final_text(completion: Any) -> str | None:
    """The text of a completion's last assistant message; None if it made a tool call.

    A message's content is a string or a list of content parts, whose ``text`` parts are joined.

    Raises:
        TypeError: the completion is neither a string nor a list of chat messages (dicts), or
            its last message's content is neither a string nor a list of content parts.
    """
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, list) or (completion and not isinstance(completion[-1], dict)):
        shown = type(completion[-1] if isinstance(completion, list) else completion).__name__
        raise TypeError(f"a completion must be a string or a list of chat messages (dicts); "
                        f"got {shown}")
    last = completion[-1] if completion else {}
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content") or ""
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    if not isinstance(content, str):
        raise TypeError(f"an assistant message's content must be a string or a list of content "
                        f"parts (dicts); got {type(content).__name__}")
    return content


def environment_reward(completions: list[Any], environments: list[EnvSession] | None = None,
                       **_: Any) -> list[float]:
    """Reward function for ``GRPOTrainer``: the env's own reward for each rollout.

    An episode TRL left open gets its last assistant text (the answer without a tool call, its
    reasoning removed) as the final turn first, so the verifier scores the whole episode. One
    that TRL cut short while calling tools (``max_tool_calling_iterations``,
    ``max_completion_length``) has no verdict and scores 0.0.

    Raises:
        TypeError: a completion is neither a string nor a list of chat messages (dicts), or an
            environment is not an :class:`EnvSession`.
        ValueError: no environments (the trainer has no ``environment_factory``), or not one
            per completion.
        Exception: the exception an env's ``env.step`` raised in TRL's tool loop (which showed
            it to the model as a tool error), so that a backend fault stops training.
    """
    if environments is None:
        raise ValueError("environment_reward scores the envs of GRPOTrainer(environment_factory="
                         "environment_class(...)); the trainer passed none")
    if len(environments) != len(completions):
        raise ValueError(f"environment_reward needs one env per completion; got "
                         f"{len(completions)} completions and {len(environments)} envs")
    for session in environments:
        if not isinstance(session, EnvSession):
            raise TypeError(f"environment_reward scores EnvSession instances (environment_class,"
                            f" turn_environment_class); got {type(session).__name__}")
        if session.fault is not None:
            raise session.fault
    return [session._finish(_final_text(completion))
            for completion, session in zip(completions, environments, strict=True)]
