"""Agents the harness can run: any backend, a plain callable, or the oracle.

Every agent is a :class:`~agentworld_envs.backends.Backend`, so the runner batches them all
the same way. :class:`OracleBackend` (backend name ``"oracle"``) plays the reference solutions:
it recognises the task variant from the conversation's user prompt.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion, make_backend
from agentworld_envs.backends.replies import text_tool_calls
from floor_tasks.solutions import solution
from floor_tasks.task import load_tasks

__all__ = ["OracleBackend", "CallableBackend", "as_backend"]

AgentFn = Callable[[list[dict[str, Any]], list[dict[str, Any]]], str]


def _completion(text: str, started: float) -> Completion:
    """The agent's action as a completion; :meth:`Completion.to_action` gives the text back."""
    return Completion(text=text, tool_calls=text_tool_calls(text),
                      latency_s=time.perf_counter() - started)


@functools.cache
def _prompt_index() -> dict[str, tuple[str, str]]:
    """Map every variant's prompt to its (task id, variant name)."""
    index = {}
    for task in load_tasks():
        for name in task.variant_names:
            index.setdefault(task.variant(name).prompt, (task.id, name))
    return index


class OracleBackend(Backend):
    """Plays the reference solution of whichever task variant the conversation is about."""

    name = "oracle"
    blocking = False

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer each conversation with the next step of its reference solution."""
        out = []
        for request in requests:
            started = time.perf_counter()
            prompt = next((m["content"] for m in request.messages if m["role"] == "user"), None)
            if prompt not in _prompt_index():
                raise BackendError("oracle: the conversation's prompt is not an AgentFloor task")
            task_id, variant = _prompt_index()[prompt]
            turn = sum(m["role"] == "assistant" for m in request.messages)
            steps = solution(task_id, variant)
            out.append(_completion(steps[min(turn, len(steps) - 1)], started))
        return out


class CallableBackend(Backend):
    """Wraps ``agent(messages, tools) -> action`` as a backend."""

    name = "callable"

    def __init__(self, agent: AgentFn) -> None:
        self.agent = agent

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Call the agent once per conversation."""
        out = []
        for request in requests:
            started = time.perf_counter()
            out.append(_completion(self.agent(request.messages, request.tools or []), started))
        return out

    def describe(self) -> dict[str, Any]:
        """Name the wrapped callable."""
        return {"name": self.name, "callable": getattr(self.agent, "__qualname__", "agent")}


def as_backend(agent: Backend | Mapping[str, Any] | str | AgentFn) -> Backend:
    """Turn a backend, a backend config, a backend name or a callable into a backend."""
    if isinstance(agent, Backend):
        return agent
    if isinstance(agent, Mapping | str):
        return make_backend(dict(agent) if isinstance(agent, Mapping) else agent)
    if callable(agent):
        return CallableBackend(agent)
    raise TypeError(f"cannot run {agent!r} as an agent: give a backend, a config or a callable")
