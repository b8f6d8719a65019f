"""Generated C1 splits and run-time registrations: an id always serves what was registered
under it last, and splits that differ only in ``per_task`` do not share ids."""

from __future__ import annotations

from floor_tasks.database import load_fixture, register_fixture
from floor_tasks.env import FloorEnv
from floor_tasks.generated import generated_c1
from floor_tasks.task import load_task, register_task


def _records(split_id: str) -> list[str]:
    task_id, _ = split_id.split("/")
    return [i["record_id"] for i in load_task(task_id).instances]


def test_splits_that_differ_only_in_per_task_have_their_own_tasks() -> None:
    pairs = generated_c1(4, 4, seed=11, per_task=2)
    fours = generated_c1(4, 4, seed=11, per_task=4)
    assert not set(pairs.tasks) & set(fours.tasks)
    for split in (pairs, fours):
        for scenario in split.train + split.held_out:
            task_id, variant = scenario.split("/")
            env = FloorEnv(task_id, variant=variant)
            _, info = env.reset(seed=0)
            record = load_task(task_id).variant(variant).params["record_id"]
            assert record in load_fixture(load_task(task_id).fixture).records
            assert info["variant"] == variant


def test_the_default_per_task_keeps_its_ids() -> None:
    assert generated_c1(4, 4, seed=12).tasks == ["C1_g4_4_s12_train0", "C1_g4_4_s12_held_out0"]


def test_registering_again_replaces_what_load_task_and_load_fixture_serve() -> None:
    base = load_task("C1")
    first = base.model_copy(update={"id": "C1_review_reregistered", "title": "first"})
    register_task(first)
    assert load_task("C1_review_reregistered").title == "first"
    register_task(base.model_copy(update={"id": "C1_review_reregistered", "title": "second"}))
    assert load_task("C1_review_reregistered").title == "second"
    register_fixture("C1_review_fixture", {"records": {"A": {}}})
    assert list(load_fixture("C1_review_fixture").records) == ["A"]
    register_fixture("C1_review_fixture", {"records": {"B": {}}})
    assert list(load_fixture("C1_review_fixture").records) == ["B"]
