"""Verdicts on hostile AgentFloor answers and traces: denied values, sentence counts that case
cannot dodge, operands named but never used, and simulated calls the real tools would refuse."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentworld_envs.domains.floor.verdict import simulated_verdict
from agentworld_envs.world.scenario import FloorRef
from floor_tasks.env import FloorEnv


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def verdict(task_id: str, actions: list[str], variant: str = "v0") -> dict[str, Any]:
    env = FloorEnv(task_id, variant=variant)
    env.reset(seed=0)
    for action in actions:
        *_, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info["verdict"]
    raise AssertionError("the episode did not end")


A1_LOOKUP = call("lookup_record", record_id="P104")
D2_LOOKUP = call("lookup_record", record_id="INV-77")
B3_STEPS = [call("lookup_record", record_id="PKG-88"),
            call("compute_value", operation="multiply", inputs={"a": 12, "b": 8})]


@pytest.mark.parametrize(("task_id", "actions"), [
    ("A1", [A1_LOOKUP, "P104 is not active."]),
    ("A1", [A1_LOOKUP, "status: not active"]),
    ("A1", [A1_LOOKUP, "P104 isn't currently active."]),
    ("B3", [*B3_STEPS, "It is 20, not 96."]),
    ("D2", [D2_LOOKUP, "official_stock: not 47"]),
    ("A05", ["Not 18 months."]),
])
def test_a_denied_value_is_not_stated(task_id: str, actions: list[str]) -> None:
    result = verdict(task_id, actions)
    assert not result["passed"] and "final_answer" in result["failure_labels"]


@pytest.mark.parametrize(("task_id", "actions"), [
    ("A1", [A1_LOOKUP, "P104 is active, not inactive."]),
    ("D2", [D2_LOOKUP, "The official stock is not 52 but 47."]),
    ("D2", [D2_LOOKUP, "official_stock: 47 (not the warehouse's 52)"]),
    ("A05", ["Extensions must not exceed 18 months without VP approval."]),
])
def test_a_value_stated_beside_a_denied_one_still_counts(task_id: str,
                                                         actions: list[str]) -> None:
    assert verdict(task_id, actions)["passed"]


@pytest.mark.parametrize("summary", [
    "Payment processing failed. the rate limiter was misconfigured. it lasted 47 minutes.",
    "Payment processing failed! the rate limiter was misconfigured? it lasted 47 minutes.",
])
def test_lowercase_sentences_count_against_the_sentence_limit(summary: str) -> None:
    result = verdict("A02", [summary])
    assert result["checks"]["final_answer"]["reason"] == (
        "summary has 3 sentences, at most 2 allowed")


def test_decimals_and_abbreviations_followed_by_numbers_end_no_sentence() -> None:
    summary = ("The payment service failed for approx. 47 minutes after a rate limiter "
               "misconfiguration in config v2.4 let 12x traffic through.")
    assert verdict("A02", [summary])["passed"]


def test_an_operand_counts_only_as_a_value_not_as_an_input_name() -> None:
    score = {"values": {"skill_score": 70, "98": 0}, "weights": {"skill_score": 1, "98": 0}}
    result = verdict("C3", [call("lookup_record", record_id="APP-55"),
                            call("compute_value", operation="weighted_score", inputs=score),
                            call("submit_decision", record_id="APP-55", action="approve")])
    assert result["checks"]["trajectory"]["subchecks"]["computed_with"]["passed"] is False


def _ok(tool: str, result: dict[str, Any]) -> str:
    return json.dumps({"tool_name": tool, "call_id": "x", "status": "ok", "result": result,
                       "error": None})


@pytest.mark.parametrize(("task_id", "arguments", "shown", "failed"), [
    ("C2", {"record_ids": [["DM-7"], "DM-8"], "criterion": "approved_version"},
     _ok("compare_records", {"criterion": "approved_version",
                             "comparison": [{"id": "DM-8", "criterion_value": "v2.4"}]}),
     "disambiguated"),
    ("C2", {"record_ids": "DM-7 DM-8", "criterion": "approved_version"},
     _ok("compare_records", {"criterion": "approved_version",
                             "comparison": [{"id": "DM-8", "criterion_value": "v2.4"}]}),
     "disambiguated"),
    ("D1", {"record_id": ["SUP-11"]},
     _ok("lookup_record", {"record_id": "SUP-11", "fields": {"lead_time_days": 7}}),
     "all_inspected"),
])
def test_simulated_calls_with_arguments_the_tools_refuse_read_no_record(
        task_id: str, arguments: dict[str, Any], shown: str, failed: str) -> None:
    name = json.loads(shown)["tool_name"]
    action = json.dumps({"name": name, "arguments": arguments})
    result = simulated_verdict(FloorRef(task_id=task_id, variant="v0"),
                               [action, "Selected: DM-8, approved_version v2.4."], [shown, ""],
                               "final_answer")
    assert failed in result["failure_labels"]
