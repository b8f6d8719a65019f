"""C1 on generated component records: a split with many records, held-out ones unseen.

AgentFloor's C1 has five instances on six records, so a held-out split can only hold out two or
three of them. :func:`generated_c1` derives tasks from C1, with its prompts, tools, checks and
rule (status ``active`` -> ``assign_primary``, ``inactive`` -> ``assign_fallback``), on
generated records: ``train`` records for training and ``held_out`` others, a few to a task as
in C1 (whose candidate actions offer every instance's steps, so a task's size sets how many
candidates an episode offers), each task half active and half inactive. Each task's fixture
holds only its own records, so no training episode (its candidate actions, its tools' database,
a world model's notes) names a held-out record. A held-out record's id and name share nothing
with a training record's: names are drawn from disjoint word lists (no "Coolant Loop A" beside
"Coolant Loop B"), ids without replacement and three apart. Each record is one variant, in one
of the five wordings (its index modulo 5), so that held-out items are independent records, not
one record five times.

Each task is registered (:func:`floor_tasks.task.register_task`, its fixture with
:func:`floor_tasks.database.register_fixture`), so every tool that takes a task id
(``FloorEnv``, the candidates, the verifier, ``AgentWorld/Floor-v0``'s ``<id>/<variant>``
scenarios, real mode included) takes it too. It is not one of the 30 AgentFloor tasks: not in
the ladder, and no ``AgentFloor/<id>-v0`` is registered for it. Its draws come from ``seed``
alone.

Example:
    >>> split = generated_c1(train=4, held_out=4, seed=0, per_task=2)
    >>> split.train[1:3]
    ['C1_g4_4_p2_s0_train0/i1v1', 'C1_g4_4_p2_s0_train1/i0v2']
    >>> split.held_out[:1], split.tasks[-1]
    (['C1_g4_4_p2_s0_held_out0/i0v4'], 'C1_g4_4_p2_s0_held_out1')
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import numpy as np

from floor_tasks.database import register_fixture
from floor_tasks.task import Task, load_task, register_task
from floor_tasks.verifier import check_names

__all__ = ["GeneratedSplit", "generated_c1", "regenerate", "regenerate_fixture"]

_QUALIFIERS = ("Primary", "Auxiliary", "Forward", "Upper", "Inner", "Main", "North", "Port",
               "Reserve", "Secondary", "Aft", "Lower", "Outer", "Central", "South", "Starboard")
_PARTS = ("Pump", "Valve", "Filter", "Relay", "Sensor", "Heater", "Bearing", "Manifold",
          "Compressor", "Gasket", "Actuator", "Inverter", "Condenser", "Turbine", "Damper",
          "Regulator")
_KINDS = ("Module", "Unit", "Assembly", "Block", "Cartridge", "Housing", "Stage", "Array")
_DECISIONS = (("active", "assign_primary"), ("inactive", "assign_fallback"))
_GENERATED_ID = re.compile(
    r"C1_g(\d{1,4})_(\d{1,4})(?:_p(\d{1,4}))?_s(\d{1,10})_(?:train|held_out)\d+")
"""A generated task's id: its split's records, per task (when not 4) and seed."""


@dataclass(frozen=True)
class GeneratedSplit:
    """Registered tasks on generated records, and the training and held-out variants as
    scenario ids (``<task>/<variant>``, one per record)."""

    train: list[str]
    held_out: list[str]

    @property
    def tasks(self) -> list[str]:
        """The registered tasks' ids, training ones first."""
        return list(dict.fromkeys(v.split("/")[0] for v in self.train + self.held_out))


def _names(rng: np.random.Generator, count: int, half: int) -> list[str]:
    """``count`` distinct names from one half of each word list (0 or 1)."""
    words = [pool[half * len(pool) // 2:(half + 1) * len(pool) // 2]
             for pool in (_QUALIFIERS, _PARTS, _KINDS)]
    every = [f"{a} {b} {c}" for a in words[0] for b in words[1] for c in words[2]]
    if count > len(every):
        raise ValueError(f"at most {len(every)} records a split, not {count}")
    return [every[i] for i in rng.choice(len(every), size=count, replace=False)]


def _register(base: Task, task_id: str, rng: np.random.Generator, ids: list[str],
              names: list[str], first: int) -> list[str]:
    """One task on these records, alternately active and inactive; its variants, record k
    in wording ``(first + k) % 5``."""
    records, instances = {}, []
    for k, (record_id, name) in enumerate(zip(ids, names, strict=True)):
        status, action = _DECISIONS[k % 2]
        inspected = datetime.date(2026, 1, 1) + datetime.timedelta(days=int(rng.integers(120)))
        records[record_id] = {"name": name, "status": status,
                              "version": f"{rng.integers(1, 6)}.{rng.integers(10)}",
                              "last_inspection": inspected.isoformat()}
        instances.append({"record_id": record_id, "status": status, "action": action})
    fixture = f"{base.fixture}{task_id.removeprefix(base.id)}"
    register_fixture(fixture, {"records": records})
    task = Task.model_validate({**base.model_dump(), "id": task_id, "fixture": fixture,
                                "instances": instances,
                                "title": f"{base.title} (generated records)"})
    check_names(task)
    register_task(task)
    return [f"{task_id}/i{k}v{(first + k) % len(base.prompts)}" for k in range(len(ids))]


def generated_c1(train: int, held_out: int, seed: int = 0, per_task: int = 4) -> GeneratedSplit:
    """C1 on ``train`` and ``held_out`` generated records, ``per_task`` (even) to a task, as
    C1 has a few: registered as ``C1_g<train>_<held_out>_s<seed>_train<j>`` and
    ``..._held_out<j>`` (``C1_g<train>_<held_out>_p<per_task>_s<seed>_...`` when ``per_task``
    is not 4, so that splits that differ only there have tasks of their own). Calling again
    registers the same tasks."""
    if per_task < 2 or per_task % 2 or train % per_task or held_out % per_task or not (
            train and held_out):
        raise ValueError(f"each split needs a positive multiple of per_task records, and "
                         f"per_task an even number (one record per decision at least); got "
                         f"train={train}, held_out={held_out}, per_task={per_task}")
    base = load_task("C1")
    stem = f"C1_g{train}_{held_out}{'' if per_task == 4 else f'_p{per_task}'}_s{seed}"
    rng = np.random.default_rng([seed, train, held_out, per_task])
    # multiples of 3: a candidate with a record's number one higher (a wrong-record
    # distractor) never names another record
    ids = [f"CMP-{n}" for n in rng.choice(np.arange(102, 1000, 3), size=train + held_out,
                                          replace=False)]
    names = _names(rng, train, 0) + _names(rng, held_out, 1)
    variants: dict[str, list[str]] = {"train": [], "held_out": []}
    for split, start, count in (("train", 0, train), ("held_out", train, held_out)):
        for j, first in enumerate(range(start, start + count, per_task)):
            variants[split] += _register(base, f"{stem}_{split}{j}", rng,
                                         ids[first:first + per_task],
                                         names[first:first + per_task], first)
    return GeneratedSplit(variants["train"], variants["held_out"])


def regenerate(task_id: str) -> bool:
    """Register, in this process, the generated task ``task_id`` names (its split's settings
    are in its id, and its draws come from them alone), as a worker process that unpickled an
    env needs (spawned ``AsyncVectorEnv`` workers, Ray actors); whether it is registered now."""
    from floor_tasks.task import is_registered

    if match := _GENERATED_ID.fullmatch(task_id):
        train, held_out, per_task, seed = match.groups()
        try:
            generated_c1(int(train), int(held_out), int(seed), int(per_task or 4))
        except ValueError:  # settings no split has
            return False
    return is_registered(task_id)


def regenerate_fixture(name: str) -> bool:
    """:func:`regenerate` for the generated task whose fixture is ``name``."""
    base = load_task("C1").fixture or ""
    return name.startswith(base) and regenerate("C1" + name.removeprefix(base))
