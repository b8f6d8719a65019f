"""Branching tasks: only what the tools return tells their variants apart."""

from __future__ import annotations

import json

import floor_tasks
from floor_tasks.candidates import candidate_actions
from floor_tasks.env import FloorEnv
from floor_tasks.task_sets import blind_pairs, branching_tasks, decisions, final_submission


def test_the_branching_tasks_are_the_status_score_and_severity_branches() -> None:
    assert branching_tasks() == ("C1", "C3", "C5")


def test_every_decision_is_offered_for_the_variants_own_record() -> None:
    for task_id in branching_tasks():
        values = set(decisions(task_id).values())
        for variant in floor_tasks.load_task(task_id).variant_names:
            gold = final_submission(task_id, variant)
            offered = {json.loads(c)["arguments"].get("action") for c in candidate_actions(
                task_id, variant, wide=True) if c.startswith('{"name": "submit_decision"')
                and json.loads(c)["arguments"].get("record_id") == gold["record_id"]}
            assert offered == values, (task_id, variant)


def test_a_policy_blind_to_observations_fails_one_variant_of_each_blind_pair() -> None:
    """Play each variant of a pair with every candidate sequence that depends only on what a
    blind policy sees (the masked prompt and the candidates, record ids as their slots): none
    passes both variants."""
    for task_id in branching_tasks():
        for v, w in blind_pairs(task_id):
            passes = {variant: set() for variant in (v, w)}
            for variant in (v, w):
                record = final_submission(task_id, variant)["record_id"]
                for decision in set(decisions(task_id).values()):
                    env = FloorEnv(task_id, variant=variant)
                    env.reset(seed=0)
                    for action in floor_tasks.solution(task_id, variant)[:-1]:
                        env.step(action)
                    submit = json.dumps({"name": "submit_decision", "arguments": {
                        **final_submission(task_id, variant), "record_id": record,
                        "action": decision}})
                    *_, info = env.step(submit)
                    if info.get("verdict", {}).get("passed"):
                        passes[variant].add(decision)
            assert passes[v] and passes[w] and not passes[v] & passes[w], (task_id, v, w)
