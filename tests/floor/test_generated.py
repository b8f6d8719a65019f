"""C1 on generated records (floor_tasks.generated): registered tasks that every tool takes, a
held-out split that shares nothing with training, and the AgentFloor ladder left as it is."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import floor_tasks
from agentworld_envs.domains import get_domain
from floor_tasks.candidates import candidate_actions
from floor_tasks.database import load_fixture, register_fixture
from floor_tasks.env import FloorEnv
from floor_tasks.generated import generated_c1
from floor_tasks.task import load_task, load_tasks, register_task


def _records(variants: list[str]) -> dict[str, dict]:
    out = {}
    for variant in variants:
        task_id, name = variant.split("/")
        task = load_task(task_id)
        record_id = task.variant(name).params["record_id"]
        out[record_id] = load_fixture(task.fixture).records[record_id]
    return out


def test_the_split_is_drawn_from_its_seed_alone() -> None:
    first, again = generated_c1(8, 8, seed=3), generated_c1(8, 8, seed=3)
    assert first == again and _records(first.train) == _records(again.train)
    other = generated_c1(8, 8, seed=4)
    assert set(_records(other.held_out)) != set(_records(first.held_out))


def test_held_out_records_share_no_id_name_word_or_neighbouring_number_with_training() -> None:
    split = generated_c1(20, 40)
    train, held_out = _records(split.train), _records(split.held_out)
    assert len(train) == len(split.train) == 20 and len(held_out) == len(split.held_out) == 40
    assert not set(train) & set(held_out)
    words = {w for r in train.values() for w in r["name"].split()}
    assert not words & {w for r in held_out.values() for w in r["name"].split()}
    numbers = sorted(int(i.split("-")[1]) for i in [*train, *held_out])
    assert all(b - a > 1 for a, b in zip(numbers, numbers[1:], strict=False))
    for records in (train, held_out):
        assert sorted(r["status"] for r in records.values()) == (
            ["active"] * (len(records) // 2) + ["inactive"] * (len(records) // 2))
    wordings = {load_task(v.split("/")[0]).variant(v.split("/")[1]).prompt.split()[0]
                for v in split.held_out}
    assert len(wordings) == 5  # the held-out records come in every wording


def test_each_generated_variant_is_played_and_judged_as_c1() -> None:
    split = generated_c1(4, 4)
    for variant in split.train + split.held_out:
        task_id, name = variant.split("/")
        solution = floor_tasks.solution(task_id, name)
        assert set(solution) <= set(candidate_actions(task_id, name, wide=True))
        env = FloorEnv(task_id)
        env.reset(seed=0, options={"variant": name})
        assert env.step(solution[0])[1:3] == (0.0, False)
        assert env.step(solution[1])[1:3] == (1.0, True)
        wrong = json.loads(solution[1])
        action = wrong["arguments"]["action"]
        wrong["arguments"]["action"] = {"assign_primary": "assign_fallback",
                                        "assign_fallback": "assign_primary"}[action]
        env = FloorEnv(task_id, variant=name)
        env.reset(seed=0)
        env.step(solution[0])
        assert env.step(json.dumps(wrong))[1] == 0.0
        # the simulated env takes it too, as <task>/<variant>
        assert get_domain("floor").resolve(variant).floor.task_id == task_id


def test_registered_tasks_stay_out_of_the_ladder_and_cannot_shadow_a_packaged_one() -> None:
    generated_c1(4, 4)
    assert len(load_tasks()) == len(floor_tasks.TASK_IDS) == 30
    assert not any(re.search("_g", t.id) for t in load_tasks())
    assert not [k for k in gym.registry if k.startswith("AgentFloor/C1_")]
    with pytest.raises(ValueError, match="packaged AgentFloor task"):
        register_task(load_task("C1"))
    with pytest.raises(ValueError, match="packaged fixture"):
        register_fixture("C1_component_assignment", {"records": {}})
    assert "CMP-31" in load_fixture("C1_component_assignment").records


@pytest.mark.parametrize(("train", "held_out", "per_task"), [(3, 4, 4), (4, 0, 4), (4, 4, 3),
                                                             (6, 4, 4)])
def test_a_split_that_cannot_balance_its_decisions_is_refused(train, held_out,
                                                              per_task) -> None:
    with pytest.raises(ValueError, match="per_task"):
        generated_c1(train, held_out, per_task=per_task)


def test_a_process_that_never_generated_a_task_rebuilds_it_from_its_id(monkeypatch) -> None:
    """A spawned worker or Ray actor unpickles an env of a generated task without having
    called ``generated_c1``: the task and its fixture failed to load there."""
    from floor_tasks import database, task

    split = generated_c1(train=4, held_out=4, seed=3, per_task=2)
    name = split.held_out[0].split("/")[0]
    before, records = load_task(name), load_fixture(load_task(name).fixture).records
    monkeypatch.setattr(task, "_REGISTERED", {})
    monkeypatch.setattr(database, "_REGISTERED", {})
    assert load_fixture(before.fixture).records == records
    assert load_task(name) == before
    with pytest.raises(KeyError, match="unknown AgentFloor task"):
        load_task("C1_g4_4_p3_s0_train0")  # settings no split has


def test_a_spawned_vector_env_plays_a_generated_task() -> None:
    split = generated_c1(train=4, held_out=4, seed=0)
    envs = gym.make_vec("AgentFloor/C1-v0", num_envs=1, vectorization_mode="async",
                        vector_kwargs={"context": "spawn", "shared_memory": False},
                        task_id=split.tasks[0])
    try:
        observations, _ = envs.reset(seed=0)
    finally:
        envs.close()
    shown = _records([v for v in split.train if v.startswith(f"{split.tasks[0]}/")])
    assert any(record_id in observations[0] for record_id in shown)
