"""Floor: the world model stands in for the AgentFloor tools on the 30 AgentFloor tasks.

Every action is also played on the real, deterministic :class:`floor_tasks.env.FloorEnv`, so
each simulated step is measured against the true observation (:mod:`agentworld_envs.bench.
fidelity`), hybrid mode can fall back to the real tool, and the real verifier's verdict is
there for ``reward="real"``. The default reward (``reward="simulated"``) is the same verifier
run over the simulated episode (:mod:`agentworld_envs.domains.floor.verdict`). Scenario ids
are ``<task>/<variant>``, e.g. ``C3/v0`` (``C3`` alone means ``C3/v0``).

The floor domain's chat layout is ours (it is not a release domain, so no release layout
applies to it): the database (one JSON entry per line) and the task in the system prompt's
``{environment}`` slot, demonstrations as ``Example N`` blocks, controls as ``**Simulation
Control:**`` lines after the action. The embedded world model reads it through its compact
view (:mod:`agentworld_envs.models.compact_view`).

The world model sees the tools' database, never the rule that accepts a submission: whether a
``submit_decision`` is accepted is decided by the real env (``SimConfig.decided_tools``), and
the agent sees the real answer. With ``real_counterpart=False`` no real env is built and the
task's rule decides it over what the simulation showed, or the scenario's own expectation
decides it (``SimConfig.decided_by``, :mod:`.verdict`). Candidate
actions are the task's gold steps among the distractors of
:func:`floor_tasks.candidates.candidate_actions` (``wide=True``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

from agentworld_envs.domains.base import ToolDomain
from agentworld_envs.domains.floor.verdict import decided_observation, simulated_verdict
from agentworld_envs.protocol.endings import SUBMITTED
from agentworld_envs.world.parsing import tagged_observation
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.prompting import environment_notes, fence, fill_template
from agentworld_envs.world.reality import Reality, RealStep
from agentworld_envs.world.rewards import EpisodeLog
from agentworld_envs.world.scenario import (
    Check,
    Control,
    Demonstration,
    FloorRef,
    RewardSpec,
    Scenario,
)
from floor_tasks import load_task, load_tasks, solution
from floor_tasks.candidates import candidate_actions
from floor_tasks.database import load_fixture
from floor_tasks.env import FloorEnv
from floor_tasks.task import Task
from floor_tasks.tools import FloorToolkit

__all__ = ["DOMAIN", "FloorDomain", "FloorReality"]


class FloorReality(Reality):
    """The real AgentFloor env of one task variant, with the simulated episode's budget."""

    honours_controls = False

    def __init__(self, ref: FloorRef, budget: int) -> None:
        self.env = FloorEnv(ref.task_id, variant=ref.variant, max_steps=budget)
        self.env.reset(seed=0)

    def step(self, action: Any, controls: Sequence[Control] = ()) -> RealStep:
        """Play the action on the real tools (which take no perturbation)."""
        observation, _, terminated, truncated, info = self.env.step(action)
        ending = info.get("termination") if terminated else None
        return RealStep(observation, terminated, ending, info.get("verdict"))


def _world_notes(task: Task) -> str:
    """What the real tools serve: the fixture database (not the submission rule)."""
    db = load_fixture(task.fixture)
    data = {"records": db.records, "search_index": db.search_index, "options": db.options,
            "constraints": db.constraints, "scripted_failures": db.scripted_failures}
    lines = [f"AgentFloor task {task.id} ({task.title}); call ids are {task.id}_<tool>_<n>.",
             "The tools' database (one entry per line, values in JSON):"]
    for section, entries in data.items():
        if entries:
            lines.append(f"{section}:")
            lines += ([f"{key}: {_json(value)}" for key, value in entries.items()]
                      if isinstance(entries, dict) else [_json(entries)])
    return "\n".join(lines)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _demonstrations(demos: Sequence[Demonstration]) -> str:
    """The ``{demonstrations}`` slot in the floor model's trained layout."""
    if not demos:
        return "(no demonstrations for this environment)"
    return "\n\n".join(
        f"Example {n}\nAction:\n{fence(d.action, 'json')}\nOutput:\n"
        f"{tagged_observation(d.observation)}" for n, d in enumerate(demos, start=1))


def _scenario(task: Task, variant_name: str) -> Scenario:
    variant = task.variant(variant_name)
    gold = solution(task.id, variant_name)
    candidates = candidate_actions(task.id, variant_name, wide=True)
    return Scenario(
        id=f"{task.id}/{variant_name}", domain="floor", instruction=variant.prompt,
        tools=FloorToolkit.schemas(task.tools), world=_world_notes(task),
        reward=RewardSpec(checks=[Check(check="floor_verifier")]),
        candidate_actions=candidates, solution=[candidates.index(a) for a in gold],
        max_steps=task.max_steps, floor=FloorRef(task_id=task.id, variant=variant_name))


class FloorDomain(ToolDomain):
    """AgentFloor tasks with simulated tools."""

    key = "floor"
    uses_tags = True

    def system_prompt(self, scenario: Scenario, fictional: bool,
                      prompts: PromptSet | None = None) -> str:
        """Our floor prompt with the tools, the demonstrations and the world notes."""
        return fill_template(
            self.prompt_template,
            tool_definitions=self.tool_definitions(scenario),
            demonstrations=_demonstrations([*self.catalog.demonstrations,
                                            *scenario.demonstrations]),
            environment=environment_notes(scenario, fictional))

    def user_message(self, scenario: Scenario, turn: int, action_text: str, language: str,
                     state: str | None, fictional: bool, controls: Sequence[str] = ()) -> str:
        """The heading, a blank line, the action, then one line per control."""
        parts = [f"### Turn {turn}", f"**Action:**\n{fence(action_text, language)}"]
        parts.extend(f"**Simulation Control:** {text}" for text in controls)
        return "\n\n".join(parts)

    @functools.cached_property
    def builtin(self) -> dict[str, Scenario]:
        """Every variant of every AgentFloor task, by ``<task>/<variant>``."""
        scenarios = [_scenario(task, name) for task in load_tasks()
                     for name in task.variant_names]
        return {s.id: s for s in scenarios}

    def resolve(self, spec: Scenario | dict[str, Any] | str) -> Scenario:
        """Also accepts a bare task id (its first variant) and a crossed variant such as
        ``C1/i3v2`` (instance 3 with prompt 2, :meth:`floor_tasks.task.Task.variant`), of an
        AgentFloor task or a registered one (:mod:`floor_tasks.generated`)."""
        if isinstance(spec, str) and "/" not in spec:
            spec = f"{spec}/v0"
        if isinstance(spec, str) and spec not in self.builtin:
            task_id, variant = spec.split("/", 1)
            if re.fullmatch(r"i\d+v\d+", variant) and (task := _task(task_id)) is not None:
                return _scenario(task, variant)
        return super().resolve(spec)

    def check(self, scenario: Scenario) -> None:
        """A floor scenario names its AgentFloor task variant (A0 tasks offer no tools)."""
        _floor_ref(scenario)

    def decide(self, scenario: Scenario, log: EpisodeLog, action: str,
               by: str = "shown") -> RealStep | None:
        """A submission with no real env: the task's rule over what the simulation showed, or
        the scenario's own expectation (``by``,
        :func:`~agentworld_envs.domains.floor.verdict.decided_observation`); an accepted one
        ends the episode, as the real env's does."""
        decided = decided_observation(_floor_ref(scenario), log.actions, log.observations,
                                      action, by)
        if decided is None:
            return None
        observation, accepted = decided
        return RealStep(observation, accepted, SUBMITTED if accepted else None, None)

    def verdict(self, scenario: Scenario, log: EpisodeLog) -> dict[str, Any]:
        """The AgentFloor verifier over the simulated episode (:mod:`.verdict`)."""
        return simulated_verdict(_floor_ref(scenario), log.actions, log.observations,
                                 log.ending)

    def start_reality(self, scenario: Scenario, budget: int) -> FloorReality:
        """The real env of the scenario's task variant."""
        return FloorReality(_floor_ref(scenario), budget)


def _task(task_id: str) -> Task | None:
    """An AgentFloor task or a registered one, by id; None for an unknown id."""
    try:
        return load_task(task_id)
    except KeyError:
        return None


def _floor_ref(scenario: Scenario) -> FloorRef:
    """The scenario's AgentFloor task variant; a ValueError when it names none."""
    if scenario.floor is None:
        raise ValueError(f"floor scenario {scenario.id} names no AgentFloor task")
    return scenario.floor


DOMAIN = FloorDomain()
