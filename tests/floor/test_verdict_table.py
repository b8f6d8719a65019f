"""Table-driven verdicts for all 30 tasks: alternative correct runs pass, wrong runs fail with
the right labels. The table is ``floor_verdict_table.yaml`` beside this file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from floor_tasks import TASK_IDS, solution
from tests.helpers.floor_play import play_to_verdict

TABLE = yaml.safe_load((Path(__file__).with_name("floor_verdict_table.yaml")).read_text())


def _action(step: Any) -> str:
    """One table step as an action string: text, one call or a list of calls."""
    if isinstance(step, str):
        return step
    calls = [{"name": name, "arguments": args} for item in (
        step if isinstance(step, list) else [step]) for name, args in item.items()]
    return json.dumps(calls[0] if len(calls) == 1 else calls)


def _verdict(task_id: str, case: dict[str, Any]) -> dict[str, Any]:
    variant = case.get("variant", "v0")
    actions = solution(task_id, variant)[:case.get("gold", 0)] + [
        _action(s) for s in case["steps"]]
    return play_to_verdict(task_id, actions, variant)


CASES = [pytest.param(task_id, outcome, case, id=f"{task_id}-{outcome}-{case['name']}")
         for task_id, table in TABLE.items() for outcome in ("pass", "fail")
         for case in table[outcome]]


def test_table_covers_every_task() -> None:
    assert set(TABLE) == set(TASK_IDS)
    for task_id, table in TABLE.items():
        assert len(table["pass"]) >= 2 and len(table["fail"]) >= 2, task_id
        assert all(case["labels"] for case in table["fail"]), task_id


@pytest.mark.parametrize("task_id, outcome, case", CASES)
def test_verdict(task_id: str, outcome: str, case: dict[str, Any]) -> None:
    verdict = _verdict(task_id, case)
    if outcome == "pass":
        assert verdict["passed"], verdict
        return
    assert not verdict["passed"]
    missing = set(case["labels"]) - set(verdict["failure_labels"])
    assert not missing, (missing, verdict["failure_labels"], verdict["checks"])
