"""AgentFloor tasks played by a planner → executor → verifier team (``team_envs/floor_team-v0``).

Each episode runs one real :class:`floor_tasks.env.FloorEnv` episode:

1. ``agent_0`` (planner) reads the task and writes a plan.
2. ``agent_1`` (executor) speaks until it writes a message with no tool call (its report to the
   verifier). Each message holding tool calls is played in the floor env, and the tool results
   are appended to the shared transcript. The executor may play at most ``max_steps - 1`` such
   messages (the task's step budget, less the verifier's turn); an accepted ``submit_decision``
   ends the episode at once.
3. ``agent_2`` (verifier) checks the work; its message is played in the floor env as the team's
   last turn, usually the final answer. If that does not end the floor episode, an empty final
   answer closes it.

The team reward is the floor verifier's reward: 1.0 if and only if every check passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import AECEnv

import floor_tasks
from agentworld_envs.protocol.tool_calls import parse_action
from team_envs.core import SharedContextEnv, SharedContextParallelEnv, check_int, wrap
from team_envs.text.base import Problem, TextEpisode, TextTeamTask

__all__ = ["FloorTeamTask", "FloorTeamEpisode", "FLOOR_ROLES", "env", "raw_env", "parallel_env"]

FLOOR_ROLES = {
    "planner": "You are the planner of a tool-using team. Read the task and write a short, "
               "numbered plan of tool calls for the executor. Do not call tools yourself.",
    "executor": "You are the executor. Follow the plan: call one or more tools per message as "
                '{"name": ..., "arguments": {...}}. When the work is done, reply without a '
                "tool call to report the result to the verifier.",
    "verifier": "You are the verifier. Check the executor's tool results against the task and "
                "write the team's final answer to the user. Your message is sent as the team's "
                "last turn.",
}
_PLANNER, _EXECUTOR, _VERIFIER = 0, 1, 2


class FloorTeamTask(TextTeamTask):
    """AgentFloor tasks for a planner → executor → verifier team.

    Args:
        tasks: Task ids to draw from (all 30 by default), e.g. ``"C3"`` or ``["A1", "B3"]``.
        executor_turns: Cap on the executor's tool-call messages (the task's budget by default).
        max_message_chars: Longer messages are cut to this many characters.

    ``reset(options={"task_id": "C3", "variant": "v2"})`` picks the task (one of ``tasks``) and
    variant.
    """

    family = "floor_team"

    def __init__(self, tasks: str | Sequence[str] | None = None,
                 executor_turns: int | None = None, max_message_chars: int = 4000) -> None:
        super().__init__(roles=tuple(FLOOR_ROLES), role_prompts=FLOOR_ROLES,
                         max_message_chars=max_message_chars)
        if tasks is not None and not isinstance(tasks, str | Iterable):
            raise ValueError(f"tasks must be a task id or a list of them, got {tasks!r}")
        chosen = list(floor_tasks.TASK_IDS) if tasks is None else (
            [tasks] if isinstance(tasks, str) else list(tasks))
        if not chosen:
            raise ValueError("tasks is empty: name at least one AgentFloor task id, or leave "
                             "tasks out for all of them")
        unknown = [task for task in chosen if task not in floor_tasks.TASK_IDS]
        if unknown:
            raise ValueError(f"unknown AgentFloor task ids {unknown}; "
                             f"use ids from {list(floor_tasks.TASK_IDS)}")
        self.tasks = tuple(chosen)
        self.executor_turns = None if executor_turns is None else check_int(
            "executor_turns", executor_turns, 0)

    @property
    def max_messages(self) -> int:
        """Planner, executor turns plus its report, verifier."""
        longest = max(floor_tasks.load_task(t).max_steps for t in self.tasks)
        return 2 + max(longest, (self.executor_turns or 0) + 1)

    def system_prompt(self, agent: int) -> str:
        """The role prompt."""
        return self.role_prompts[self.roles[agent]]

    def executor_budget(self, task_id: str) -> int:
        """How many tool-call messages the executor may play on ``task_id``."""
        budget = floor_tasks.load_task(task_id).max_steps - 1
        return budget if self.executor_turns is None else min(budget, self.executor_turns)

    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> FloorTeamEpisode:
        """Reset a floor env on a task drawn from ``rng`` (or ``options["task_id"]``, one of
        ``tasks``)."""
        options = dict(options or {})
        task_id = options.get("task_id")
        if task_id is None:
            task_id = self.tasks[int(rng.integers(len(self.tasks)))]
        if task_id not in self.tasks:  # the turn space and message cap are sized for these
            raise ValueError(f"options['task_id'] must be one of this env's tasks "
                             f"{list(self.tasks)}, got {task_id!r}; pass tasks=[...] to "
                             f"include it")
        floor_options = {"variant": options["variant"]} if "variant" in options else None
        # The episode's own floor env (a fraction of a millisecond to make): the task keeps no
        # episode state, so that envs sharing it play independent episodes.
        env = gym.make(floor_tasks.env_id(task_id))
        prompt, info = env.reset(seed=int(rng.integers(2**31 - 1)), options=floor_options)
        problem = Problem(prompt, ("",) * self.n_agents, None,
                          {"task_id": task_id, "variant": info["variant"]})
        return FloorTeamEpisode(self, problem, env,
                                json.dumps(info["tools"]) if info["tools"] else "")


class FloorTeamEpisode(TextEpisode):
    """One team episode over one floor env episode."""

    def __init__(self, task: FloorTeamTask, problem: Problem, floor_env: gym.Env,
                 tool_schemas: str) -> None:
        super().__init__(task, problem)
        self.floor_env = floor_env
        self._tool_schemas = tool_schemas
        self._budget = task.executor_budget(problem.details["task_id"])
        self._executed = 0
        self._floor_result: tuple[float, dict[str, Any]] | None = None

    def tools(self, agent: int) -> str:
        """The floor task's tool schemas, for the executor only."""
        return self._tool_schemas if agent == _EXECUTOR else ""

    def act(self, action: Any) -> dict[str, Any]:
        """Record the message; play the executor's tool calls and the verifier's last turn."""
        speaker, text, info = self.append(action)
        if speaker == _PLANNER:
            self._speaker = _EXECUTOR
        elif speaker == _EXECUTOR:
            parsed = parse_action(text)
            if (parsed.calls or parsed.errors) and self._executed < self._budget:
                self._executed += 1
                info["floor"] = self._play(text)
                if self._floor_result is not None:
                    self._speaker = None
            else:
                self._speaker = _VERIFIER
        else:
            info["floor"] = self._play(text)
            if self._floor_result is None:
                self._play("")
            self._speaker = None
        return info

    def _play(self, text: str) -> dict[str, Any]:
        observation, reward, terminated, truncated, info = self.floor_env.step(text)
        if observation:
            self.record(None, "tool", observation)
        if terminated or truncated:
            self._floor_result = (float(reward), info["verdict"])
        return {"invalid_action": bool(info.get("invalid_action")), "ended": terminated or (
            truncated)}

    def verdict(self) -> tuple[float, dict[str, Any]]:
        """The floor verifier's reward and verdict."""
        reward, verdict = self._floor_result
        return reward, {**verdict, "passed": reward == 1.0, **self.problem.details}


class raw_env(SharedContextEnv):
    """AgentFloor teams as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "floor_team_v0"}
    task_type = FloorTeamTask


def env(**kwargs: Any) -> AECEnv:
    """AgentFloor teams as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """AgentFloor teams in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
