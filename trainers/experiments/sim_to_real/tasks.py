"""The two task kinds, each with its training and held-out variants and its real env: a
branching AgentFloor task (:class:`FloorTask`) or generated MCP servers of one family
(:class:`McpTask`); :func:`make_task` picks one from ``--task``."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.wrappers import TimeLimit

import floor_tasks
from agentworld_envs.cli_errors import UsageError
from agentworld_envs.domains import get_domain
from agentworld_envs.domains.mcp.servers import FAMILIES, mcp_server_scenario
from agentworld_envs.sim.env import AgentWorldEnv
from floor_tasks.candidates import candidate_actions
from floor_tasks.env import FloorEnv
from floor_tasks.generated import generated_c1
from floor_tasks.task_sets import branching_tasks, decisions
from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.wrappers import InstructionFirst


def _named_variant(variant: str) -> str:
    """The named variant with the same instance (``i3v2`` -> ``i3``, ``i0v2`` -> ``v2``)."""
    crossed = re.fullmatch(r"i(\d+)v(\d+)", variant)
    if crossed is None:
        return variant
    instance, prompt = map(int, crossed.groups())
    return f"i{instance}" if instance else f"v{prompt}"


def _split(variant: str) -> tuple[str, str]:
    """A floor variant's task and name (``C1/i3v2`` -> ``C1``, ``i3v2``)."""
    task, name = variant.split("/")
    return task, name


class FloorTask:
    """A branching AgentFloor task. A variant is a scenario id, ``<task>/<variant>``: on
    generated records (``--floor-records``) the variants are of several tasks derived from C1
    (:mod:`floor_tasks.generated`), the held-out ones of others than the training ones;
    otherwise all of ``--task``. The real env is the task's ``FloorEnv``; PPO's is
    ``AgentWorld/Floor-v0`` in real mode with the real verifier's reward (the same tools and
    verdict, and it draws variants of any task)."""

    domain = "floor"
    score = "balanced success, held-out real variants"

    def __init__(self, args: Args) -> None:
        if args.floor_records:
            if args.task != "C1":
                raise UsageError(f"records are generated for C1 only, not {args.task}; pass "
                                 "--floor-records '' and --train-variants/--eval-variants")
            if len(args.floor_records) != 2:
                raise UsageError(f"--floor-records takes two counts, training and held-out "
                                 f"records (such as 20,40), not {args.floor_records}")
            try:
                split = generated_c1(*args.floor_records, seed=args.floor_records_seed)
            except ValueError as error:
                raise UsageError(f"--floor-records: {error}") from error
            self.train, self.eval = split.train, split.held_out
        else:
            self.train = [f"{args.task}/{v}" for v in args.train_variants]
            self.eval = [f"{args.task}/{v}" for v in args.eval_variants]
        self.train_tasks = list(dict.fromkeys(_split(v)[0] for v in self.train))
        """The tasks trained on (a simulator of their records stands in for their tools)."""
        named = {task: decisions(task) for task, _ in map(_split, self.train + self.eval)}
        self.decisions = {v: named[t][_named_variant(n)]
                          for v in self.train + self.eval for t, n in [_split(v)]}
        """Each variant's decision: held-out success is balanced over them."""

    def scenario(self, variant: str) -> str:
        return variant

    def solution(self, variant: str) -> list[str]:
        """The reference solution's actions on one variant."""
        return floor_tasks.solution(*_split(variant))

    def play(self, variant: str, steps: int | None, seed: int) -> tuple[Any, str]:
        """The real env of one variant, reset, and its prompt."""
        task, name = _split(variant)
        env = FloorEnv(task, variant=name, max_steps=steps)
        return env, env.reset(seed=seed)[0]

    @property
    def budget(self) -> int:
        return floor_tasks.load_task(self.train_tasks[0]).max_steps

    def max_candidates(self) -> int:
        return max(len(candidate_actions(*_split(v), wide=True)) for v in self.train + self.eval)

    def _real(self, variants: list[str], steps: int) -> gym.Env:
        """``AgentWorld/Floor-v0`` in real mode on these variants, shown as the real env."""
        return InstructionFirst(TimeLimit(AgentWorldEnv(
            "floor", max_steps=steps, mode="real", reward="real", scenarios=variants),
            self.budget))

    def real_env(self, steps: int) -> gym.Env:
        """The real env drawing a training variant at each reset (PPO's)."""
        return self._real(self.train, steps)

    def eval_env(self) -> tuple[gym.Env, Callable[[str], dict[str, Any]]]:
        """The real env that scores held-out variants, and the reset options of one."""
        return self._real(self.eval, self.budget), lambda variant: {"scenario": variant}


IDENTITY_FIELDS = ("name", "title", "plate")
"""Record fields that name a record, besides its id (its first field)."""


def identities(scenario: Any) -> set[str]:
    """The ids and names of a generated server's records: a held-out server shares none with
    the training servers, so no held-out record or name was seen in training."""
    return {str(value) for record in scenario.mcp.records for key, value in record.items()
            if key == next(iter(record)) or key in IDENTITY_FIELDS}


def answer_values(scenario: Any) -> set[str]:
    """The values a generated server offers as answers: its reference answer and the wrong
    candidates its checks exclude. A held-out server offers none that a training server
    offered, so no answer value a policy was rewarded or penalised for in training recurs."""
    return {scenario.reference_answer,
            *(value for check in scenario.reward.checks for value in check.excludes)}


class McpTask:
    """Generated MCP servers of one family: the real env is the executable twin
    (``AgentWorld/MCP-v0`` with ``mode="real"``); a variant is a generator seed."""

    domain = "mcp"
    score = "success, held-out servers on the twin"
    budget = get_domain("mcp").max_steps

    def __init__(self, args: Args) -> None:
        family = args.task.removeprefix("mcp:")
        if family not in FAMILIES:
            raise UsageError(f"no generated MCP family {family!r}; choose from {FAMILIES}")
        servers = ((str(seed), s) for seed in itertools.count()
                   if (s := mcp_server_scenario(seed)).mcp.family == family)
        train = dict(itertools.islice(servers, args.mcp_train))
        seen = set().union(*map(identities, train.values()))
        offered = set().union(*map(answer_values, train.values()))
        held_out = ((v, s) for v, s in servers
                    if not identities(s) & seen and not answer_values(s) & offered)
        self._servers = {**train, **dict(itertools.islice(held_out, args.mcp_eval))}
        self.train, self.eval = list(train), list(self._servers)[args.mcp_train:]
        self.decisions = dict.fromkeys(self.eval, "answer")  # one decision: plain success
        self._real: dict[tuple[str, int | None], AgentWorldEnv] = {}

    def scenario(self, variant: str) -> Any:
        return self._servers[variant]

    def solution(self, variant: str) -> list[str]:
        """The reference solution's actions on one server."""
        scenario = self._servers[variant]
        return [scenario.candidate_actions[i] for i in scenario.solution]

    def played(self, variants: list[str], steps: int | None) -> AgentWorldEnv:
        """``AgentWorld/MCP-v0`` on these servers' twins, with no world model."""
        return AgentWorldEnv("mcp", max_steps=steps, mode="real",
                             scenarios=[self._servers[v] for v in variants])

    def play(self, variant: str, steps: int | None, seed: int) -> tuple[Any, str]:
        """The twin of one server, reset, and its prompt (the instruction, as in training)."""
        if (variant, steps) not in self._real:
            self._real[variant, steps] = self.played([variant], steps)
        env = self._real[variant, steps]
        return env, env.reset(seed=seed)[1]["instruction"]

    def max_candidates(self) -> int:
        return max(len(s.candidate_actions) for s in self._servers.values())

    def _twin(self, variants: list[str], steps: int) -> gym.Env:
        return InstructionFirst(TimeLimit(self.played(variants, steps), self.budget))

    def real_env(self, steps: int) -> gym.Env:
        return self._twin(self.train, steps)

    def eval_env(self) -> tuple[gym.Env, Callable[[str], dict[str, Any]]]:
        return self._twin(self.eval, self.budget), lambda v: {"scenario": self._servers[v]}


def make_task(args: Args) -> FloorTask | McpTask:
    if args.task.startswith("mcp:"):
        return McpTask(args)
    if args.task not in branching_tasks():
        raise UsageError(f"{args.task} is not a branching task; choose from {branching_tasks()} "
                         "or mcp:<family>")
    return FloorTask(args)
