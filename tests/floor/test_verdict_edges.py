"""Verdicts on near-miss AgentFloor trajectories, against the reference's rules and the
documented deviations (README, "Differences from the reference AgentFloor harness")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from floor_tasks.env import FloorEnv
from floor_tasks.verifier import asserted_labels, field_matches

LABELS = ["bug", "feature_request", "billing", "access_issue"]


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def play(task_id: str, actions: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play the actions; the envelopes of every step and the last step's info."""
    env = FloorEnv(task_id, variant="v0")
    env.reset(seed=0)
    envelopes, info = [], {}
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        envelopes += info.get("tool_results", [])
        if terminated or truncated:
            break
    return envelopes, info


E5_LOOKUP = call("lookup_record", record_id="SV-9")
E5_SUBMIT = call("submit_decision", component_version="v2.1", deployment_region="region-east")


@pytest.mark.parametrize("value", [["v2.1"], {"v": "v2.1"}])
def test_an_unhashable_e5_version_is_a_plain_rejection(value: Any) -> None:
    envelopes, _ = play("E5", [call("submit_decision", component_version=value,
                                    deployment_region="region-east")])
    assert envelopes[-1]["error"]["type"] == "submission_rejected"
    assert envelopes[-1]["error"]["recoverable"] is True


@pytest.mark.parametrize(("task_id", "scripted"), [
    ("E5", call("check_constraint", record_id="SV-9", constraint_name="platform_compatibility",
                strict=True)),
    ("D4", call("search_records", query="Alfa Sensr Pro", limit=5)),
])
def test_a_scripted_call_with_bad_arguments_is_malformed(task_id: str, scripted: str) -> None:
    """The reference validates the schema before its database serves a scripted failure."""
    envelopes, _ = play(task_id, [scripted])
    assert envelopes[0]["error"]["type"] == "schema_validation_error"


def test_an_e5_run_whose_only_compatibility_check_was_malformed_fails() -> None:
    check = call("check_constraint", record_id="SV-9", constraint_name="platform_compatibility",
                 strict=True)
    _, info = play("E5", [E5_LOOKUP, check, E5_SUBMIT])
    assert not info["verdict"]["passed"]
    assert {"valid_arguments", "must_call"} <= set(info["verdict"]["failure_labels"])


C4_LIST = call("list_options", option_set="vendors")
C4_SUBMIT = call("submit_decision", vendor_id="V-3")


def test_c4_preferred_first_needs_a_successful_check_of_the_preferred_vendor() -> None:
    failed_on_v1 = call("check_constraint", record_id="V-1", constraint_name="budget")
    checked_v3 = call("check_constraint", record_id="V-3", constraint_name="budget_limit")
    _, info = play("C4", [C4_LIST, failed_on_v1, checked_v3, C4_SUBMIT])
    assert info["verdict"]["failure_labels"] == ["first_check_on"]


def test_c4_a_failed_check_before_the_preferred_vendor_is_not_its_first_check() -> None:
    failed_on_v2 = call("check_constraint", record_id="V-2", constraint_name="budget")
    checked_v1 = call("check_constraint", record_id="V-1", constraint_name="budget_limit")
    _, info = play("C4", [C4_LIST, failed_on_v2, checked_v1, C4_SUBMIT])
    assert info["verdict"]["passed"], info["verdict"]["failure_labels"]


@pytest.mark.parametrize("prefix", ["\u0130" * 12, "I" * 12])
def test_a_label_key_is_found_whatever_lowercasing_does_to_the_text_before_it(
        prefix: str) -> None:
    """"İ" lowercases to two characters; the key's position must still point at its value."""
    text = f"{prefix} category: bug. Not billing; feature_request is what they asked for though."
    assert asserted_labels(text, LABELS, ["label", "category"]) == ["bug"]


@pytest.mark.parametrize(("text", "how"), [
    ('{"official_stock": "52 (audit 47)"}', None),
    ('{"official_stock": [52, 47]}', None),
    ("official_stock: 52 (audit 47)", None),
    ('{"official_stock": "47 units"}', "strict"),
    ('{"official_stock": 47}', "strict"),
])
def test_a_json_number_field_states_its_first_number_as_a_keyed_text_does(
        text: str, how: str | None) -> None:
    assert field_matches(text, "official_stock", 47) == how


@pytest.mark.parametrize("extra", ["self", "decision", "note"])
def test_an_extra_submission_field_is_ignored_whatever_its_name(extra: str) -> None:
    """``submit_decision`` takes a free object, as in the reference: extra fields are ignored."""
    submit = call("submit_decision", record_id="REQ-220", action="approve", **{extra: "x"})
    envelopes, info = play("A5", [submit])
    assert envelopes[0]["status"] == "ok"
    assert info["verdict"]["passed"]
