"""The arms and the simulator each trains in: the world model, the placeholder, or a rule-based
record control (:func:`record_simulator` on a floor task,
:mod:`~trainers.experiments.sim_to_real.mcp_record_controls` on an MCP family); where the world
model's answers are recorded, and the failed calls that stop a run."""

from __future__ import annotations

import json
import re
from typing import Any

import floor_tasks
from agentworld_envs.domains.floor.verdict import decision_rule
from agentworld_envs.world.parsing import tagged_observation
from floor_tasks.database import load_fixture
from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.mcp_record_controls import (
    MCP_CONTROLS,
    McpRecordSimulator,
)
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask

ARMS = ("untrained", "sim", "sim-garbage", "sim-fixture", "sim-constant", "sim-inverted", "real",
        "real-capped", "real-capped+sim", "sim-shuffled", "real-blind")
"""Every arm (an arm's index seeds its agent's draws: new arms go last)."""
CONTROLS = ("sim-fixture", "sim-constant", "sim-inverted")
"""Rule-based simulators of a floor task's records (:func:`record_simulator`): the true
records, then two that are readable but wrong (one status for every record; the inverted
status), every other field true. An MCP family's are
:data:`~trainers.experiments.sim_to_real.mcp_record_controls.MCP_CONTROLS`.

Submissions decided by the scenario (``--decided-by scenario``), ``sim-inverted`` pays the
branch its shown status does not call for and teaches the inverted rule: the readable but
wrong control that can fail. Decided by the shown status (``--decided-by shown``), it pays the
branch the shown status calls for, the true rule on relabelled records, and cannot fail."""


def record_simulator(task_ids: list[str], control: str) -> dict[str, Any]:
    """A rule-based simulator of branching floor tasks' lookups, as a ``scripted`` backend
    spec: every record of the tasks' fixtures as the fixture has it, but for the field the
    decision rests on (C1's status), which is the fixture's (``sim-fixture``), one value for
    every record (``sim-constant``) or the other value (``sim-inverted``). Every record of
    the fixtures is served, so on C1's fixture split (``--floor-records ''``) a training
    lookup of a scored record (CMP-35, CMP-36) gets it; the generated split's training tasks'
    fixtures hold training records only."""
    rules = []
    for task_id in task_ids:
        task = floor_tasks.load_task(task_id)
        _, field, table = decision_rule(task)
        values = [json.loads(value) for value in table]
        for record_id, record in load_fixture(task.fixture).records.items():
            value = record[field]
            shown = {"sim-fixture": value, "sim-constant": values[0],
                     "sim-inverted": values[(values.index(value) + 1) % len(values)]
                     if value in values else value}[control]
            envelope = {"tool_name": "lookup_record", "call_id": f"{task_id}_lookup_record_1",
                        "status": "ok", "error": None,
                        "result": {"record_id": record_id, "fields": {**record, field: shown}}}
            rules.append({"match": f'(?s)"lookup_record".*"{re.escape(record_id)}"',
                          "reply": tagged_observation(json.dumps(envelope))})
    return {"name": "scripted", "rules": rules}


RECORDING = "world_model_calls.jsonl"
"""The file in ``--out`` where the world model's answers are recorded."""


def record_path(args: Args, backend: Any) -> str | None:
    """Where the world model's answers are recorded and served again: for ``--world-model``
    only (the placeholder and the rule-based controls are not recorded, so no simulator is
    ever served another's answers)."""
    if isinstance(backend, McpRecordSimulator):
        return None
    name = backend.get("name") if isinstance(backend, dict) else backend
    return None if name == "scripted" else str(args.out / RECORDING)


BLIND = "real-blind"
"""The arm trained on the real env with every tool result hidden from its policy: the most a
policy that never reads scores on the held-out items."""


def task_arms(task: FloorTask | McpTask) -> tuple[str, ...]:
    """The arms a task has: the floor record controls, or an MCP family's, and
    the blind control."""
    other = MCP_CONTROLS if isinstance(task, FloorTask) else CONTROLS
    own = CONTROLS if isinstance(task, FloorTask) else MCP_CONTROLS
    return tuple(a for a in ARMS if a in own or a not in other)


def sim_backend(arm: str, world_model: Any, task: FloorTask | McpTask) -> Any:
    """The simulator an arm trains in: none for the real-only arms."""
    if isinstance(task, McpTask) and arm in MCP_CONTROLS:
        return McpRecordSimulator([task.scenario(v) for v in task.train], arm)
    if arm in CONTROLS:
        return record_simulator(task.train_tasks, arm)
    return {"sim": world_model, "real-capped+sim": world_model,
            "sim-garbage": "scripted"}.get(arm)


def failed_calls(simulators: list[Any]) -> int:
    """The world-model calls that failed in ``simulators`` (their observations were fallbacks).

    Raises:
        TooManyFaultsError: if any failed and the budget is on (``--max-faults`` >= 0), so
            that no table is printed from policies trained on fallbacks.
    """
    tallies = [simulator.faults for simulator in simulators]
    for tally in tallies:
        if tally.bounded:
            tally.check("the run stops before its table: its policy trained on fallbacks")
    return sum(tally.failed for tally in tallies)
