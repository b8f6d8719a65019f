"""What a simulator shows on a branching floor task, measured before any training: the record
a lookup of the asked record returns, against the fixture's.

On C1 the simulated reward follows the status the simulator shows (the task's rule over it), so
a simulator teaches reading where it shows statuses that vary, whether or not they are the
fixture's; which it shows says whether it is faithful, a copy of the fixture, or wrong.
:func:`shown_statuses` plays the lookup of each variant's own record as the first step of an
episode in a simulated env with the arm's simulator and sorts what it shows:

``every field true``       the record exactly as the fixture has it (a copy of the fixture);
``status true, other field wrong``  the right status, some other field not the fixture's;
``status wrong``           the other status (or another value);
``an error``               no record, and an error result;
``none``                   no record and no error.

"Status" is the field the task's decision rests on (C1's ``status``;
:func:`~agentworld_envs.domains.floor.verdict.decision_rule`), as the record controls read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING
from agentworld_envs.domains.floor.verdict import decision_rule
from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.registration import env_id
from floor_tasks.database import load_fixture
from floor_tasks.task import load_task
from trainers.experiments.sim_to_real.tasks import FloorTask

__all__ = ["STATUS_OUTCOMES", "shown_statuses"]

STATUS_OUTCOMES = ("every field true", "status true, other field wrong", "status wrong",
                   "an error", "none")


def _outcome(observation: str, record_id: str, record: dict[str, Any], field: str) -> str:
    """Which of :data:`STATUS_OUTCOMES` an observation is, ``field`` being the one the
    decision rests on (C1's status)."""
    envelopes = [o for o in find_objects(observation) if isinstance(o, dict)]
    for envelope in envelopes:
        result = envelope.get("result")
        if isinstance(result, dict) and result.get("record_id") == record_id \
                and isinstance(result.get("fields"), dict):
            fields = result["fields"]
            if fields.get(field) != record[field]:
                return STATUS_OUTCOMES[2]
            return STATUS_OUTCOMES[0] if fields == record else STATUS_OUTCOMES[1]
    return STATUS_OUTCOMES[3] if any(e.get("error") for e in envelopes) else STATUS_OUTCOMES[4]


def shown_statuses(task: FloorTask, variants: Sequence[str], backend: Any,
                   record_path: str | None = None) -> dict[str, float]:
    """The share of ``variants`` on which the lookup of the asked record, as an episode's
    first step in a simulated env with ``backend`` and no real counterpart, shows each of
    :data:`STATUS_OUTCOMES`."""
    env = gym.make(env_id("floor"), backend=backend, max_steps=2, sampling=EMBEDDED_SAMPLING,
                   real_counterpart=False, scenarios=[task.scenario(v) for v in variants],
                   record_path=record_path)
    counts: Counter[str] = Counter()
    try:
        for variant in variants:
            task_id, name = variant.split("/")
            floor_task = load_task(task_id)
            record_id = floor_task.variant(name).params["record_id"]
            env.reset(seed=0, options={"scenario": variant})
            lookup = task.solution(variant)[0]
            counts[_outcome(env.step(lookup)[0], record_id,
                            load_fixture(floor_task.fixture).records[record_id],
                            decision_rule(floor_task)[1])] += 1
    finally:
        env.close()
    return {o: round(counts[o] / len(variants), 4) for o in STATUS_OUTCOMES}
