"""Verifier semantics: reference solutions pass; wrong trajectories fail for the right reason.

Every variant's reference solution is replayed here and nowhere else in full: besides the
verdict, the replay checks each observation along it (in the space, one result envelope a line).
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import floor_tasks
from floor_tasks import TASK_IDS, load_task, solution


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def play(task_id: str, actions: list[str], variant: str | int = "v0") -> tuple[float, dict]:
    """Play actions until the episode ends; return the final reward and info."""
    env = gym.make(floor_tasks.env_id(task_id))
    env.reset(seed=0, options={"variant": variant})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info
    raise AssertionError(f"{task_id}: episode did not end after {len(actions)} actions")


ENVELOPE_KEYS = {"tool_name", "call_id", "status", "result", "error"}


def envelope_lines(obs: str) -> list[dict]:
    """The result envelopes of an observation, one a line; asserts each is well formed."""
    envelopes = [json.loads(line) for line in obs.split("\n")] if obs else []
    for envelope in envelopes:
        assert set(envelope) == ENVELOPE_KEYS, envelope
        assert envelope["status"] in ("ok", "not_found", "error"), envelope
    return envelopes


def failed(info: dict) -> set[str]:
    return set(info["verdict"]["failure_labels"])


ALL_VARIANTS = [(t, v) for t in TASK_IDS for v in load_task(t).variant_names]


@pytest.mark.parametrize("task_id, variant", ALL_VARIANTS)
def test_reference_solution_passes(task_id: str, variant: str) -> None:
    """The whole solution is played (no early end); every observation is in the space and
    holds result envelopes; the reward and verdict arrive with the last action only."""
    env = gym.make(floor_tasks.env_id(task_id))
    env.reset(seed=0, options={"variant": variant})
    actions = solution(task_id, variant)
    for turn, action in enumerate(actions, start=1):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space
        if turn < len(actions):
            assert not (terminated or truncated), f"ended early at turn {turn}"
            assert envelope_lines(obs)  # some solutions meet scripted failures (E5)
            assert reward == 0.0 and "verdict" not in info
    envelope_lines(obs)
    assert terminated and reward == 1.0, info.get("verdict")
    assert info["verdict"]["passed"] is True and info["verdict"]["failure_class"] is None


def test_ladder_shape() -> None:
    tiers = [load_task(t).tier for t in TASK_IDS]
    assert len(TASK_IDS) == 30 and all(tiers.count(t) == 5 for t in floor_tasks.TIERS)
    assert all(len(load_task(t).prompts) >= 5 for t in TASK_IDS)
    for task_id in ("A1", "B1", "C1", "E1"):
        assert any(v.startswith("i") for v in load_task(task_id).variant_names)


TOOL_TASKS = [t for t in TASK_IDS if load_task(t).tools]


@pytest.mark.parametrize("task_id", TOOL_TASKS)
def test_plain_text_agent_fails_every_tool_task(task_id: str) -> None:
    # Even a text answer that states the right values fails without the tool calls.
    gold = solution(task_id)[-1]
    text = gold if not gold.lstrip().startswith(("{", "[")) else "I submit: " + gold
    reward, info = play(task_id, [text])
    assert reward == 0.0
    assert info["termination"] == "final_answer" and info["verdict"]["failure_class"] == "F5"


def test_tool_free_tasks_need_no_tools() -> None:
    for task_id in ("A01", "A02", "A03", "A04", "A05"):
        assert play(task_id, solution(task_id))[0] == 1.0


# ---------------------------------------------------------------- targeted wrong trajectories


def test_c1_wrong_branch_is_rejected_and_fails() -> None:
    reward, info = play("C1", [
        call("lookup_record", record_id="CMP-33"),
        call("submit_decision", record_id="CMP-33", action="assign_primary"),
        "I assigned the primary.",
    ], variant="i1")
    assert reward == 0.0 and "submission" in failed(info)


def test_c1_branch_without_reading_status_fails() -> None:
    reward, info = play("C1", [call("submit_decision", record_id="CMP-31",
                                    action="assign_primary")])
    assert reward == 0.0
    assert {"must_call", "observed_before_submission"} <= failed(info)


def test_d2_averaging_fails_as_averaging() -> None:
    reward, info = play("D2", [call("lookup_record", record_id="INV-77"),
                               "The two counts differ, so the official stock is 49.5."])
    assert reward == 0.0 and "average_conflicting_values" in failed(info)


def test_d2_warehouse_value_fails_the_answer() -> None:
    reward, info = play("D2", [call("lookup_record", record_id="INV-77"),
                               "Audit says 47 but I trust the warehouse: official stock is 52."])
    assert reward == 0.0 and "final_answer" in failed(info)


def test_d3_skipping_a_constraint_check_fails() -> None:
    reward, info = play("D3", [
        call("list_options", option_set="hosting_plans"),
        json.dumps([call_dict("check_constraint", record_id="HP-2", constraint_name=c)
                    for c in ("budget_max", "gpu_required")]),
        "Selected plan: HP-2.",
    ])
    assert reward == 0.0
    reason = info["verdict"]["checks"]["trajectory"]["subchecks"]["constraints_checked"]
    assert not reason["passed"] and "uptime_min" in reason["reason"]


def call_dict(name: str, **arguments: Any) -> dict:
    return {"name": name, "arguments": arguments}


def test_d4_three_identical_calls_fail() -> None:
    typo = call("search_records", query="Alfa Sensr Pro")
    reward, info = play("D4", [typo, typo, typo,
                               call("search_records", query="Alpha Sensor Pro"),
                               call("lookup_record", record_id="P201"),
                               "P201 is certified."])
    assert reward == 0.0 and "repeated_identical_call" in failed(info)


def test_d4_giving_up_after_the_empty_search_fails() -> None:
    reward, info = play("D4", [call("search_records", query="Alfa Sensr Pro"),
                               "I could not find it."])
    assert reward == 0.0
    assert {"terminate_after_error", "recovered", "query_corrected"} <= failed(info)


def test_d4_answer_is_discoverable_and_negation_fails() -> None:
    steps = solution("D4")[:-1]
    assert play("D4", steps + ["Record P201 is not certified."])[0] == 0.0
    assert play("D4", steps + ["P201: certified = yes."])[0] == 1.0


def test_e2_greedy_fw1_fails_as_greedy() -> None:
    reward, info = play("E2", [
        call("compare_records", record_ids=["FW-1", "FW-2", "FW-3"], criterion="throughput_mbps"),
        call("lookup_record", record_id="FW-1"),
        call("check_constraint", record_id="FW-1", constraint_name="current_throughput_min"),
        call("submit_decision", framework_id="FW-1"),
        "FW-1 is the fastest.",
    ])
    assert reward == 0.0 and "distractor_selected" in failed(info)
    assert any("greedy_local_selection" in s["reason"] for s in
               info["verdict"]["checks"]["forbidden"]["subchecks"].values() if not s["passed"])


def test_trial_and_error_resubmission_fails() -> None:
    reward, info = play("C4", [
        call("list_options", option_set="vendors"),
        call("check_constraint", record_id="V-1", constraint_name="budget_limit"),
        call("submit_decision", vendor_id="V-1"),
        call("submit_decision", vendor_id="V-2"),
        call("submit_decision", vendor_id="V-3"),
    ])
    assert info["termination"] == "submitted"  # accepted at last ...
    assert reward == 0.0 and "trial_and_error_submission" in failed(info)  # ... but by guessing


@pytest.mark.parametrize("task_id, wrong", [
    ("A5", {"record_id": "REQ-220", "action": "reject"}),
    ("B5", {"record_id": "OC-78", "action": "process"}),
    ("C1", {"record_id": "CMP-31", "action": "assign_fallback"}),
    ("C3", {"record_id": "APP-55", "action": "reject"}),
    ("C4", {"vendor_id": "V-1"}),
    ("C5", {"record_id": "T-908", "action": "keep_in_queue"}),
    ("E2", {"framework_id": "FW-1"}),
    ("E4", {"partner_id": "EP-2"}),
    ("E5", {"component_version": "v3.0", "deployment_region": "region-east"}),
    ("E1", {"vendor_id": "V-Discount-3", "chassis_id": "CH-4", "gpu_id": "GPU-7"}),
])
def test_rejected_submission_reveals_nothing(task_id: str, wrong: dict) -> None:
    env = gym.make(floor_tasks.env_id(task_id))
    env.reset(seed=0, options={"variant": "v0"})
    obs, reward, terminated, _, _ = env.step(call("submit_decision", **wrong))
    envelope = json.loads(obs)
    assert envelope["status"] == "error" and envelope["error"]["recoverable"] is True
    assert not terminated and reward == 0.0
    gold = json.loads(solution(task_id)[-1])
    gold_values = {str(v) for v in gold["arguments"].values()} - {str(v) for v in wrong.values()}
    assert gold_values and not any(v in obs for v in gold_values)
    assert "expected" not in obs.lower()


# ---------------------------------------------------------------- fixes of the reference's defects


def test_c1_prompts_name_both_actions() -> None:
    for prompt in load_task("C1").prompts:
        assert "assign_primary" in prompt and "assign_fallback" in prompt


def test_e2_prompts_name_the_candidates_and_field() -> None:
    for prompt in load_task("E2").prompts:
        assert all(f"FW-{i}" in prompt for i in (1, 2, 3)) and "framework_id" in prompt


def test_c3_score_is_the_fixture_arithmetic() -> None:
    env = gym.make("AgentFloor/C3-v0")
    env.reset(seed=0, options={"variant": "v0"})
    env.step(call("lookup_record", record_id="APP-55"))
    obs, *_ = env.step(solution("C3")[1])
    assert json.loads(obs)["result"]["value"] == 81.2


def test_e5_needs_no_hidden_recovery_path_key() -> None:
    assert play("E5", solution("E5"))[0] == 1.0
    upgrade = solution("E5")[:2] + [call("submit_decision", component_version="v3.0",
                                          deployment_region="region-west")]
    assert play("E5", upgrade)[0] == 1.0


def test_d5_is_passable_without_manufactured_errors() -> None:
    env = gym.make("AgentFloor/D5-v0")
    env.reset(seed=0, options={"variant": "v0"})
    for action in solution("D5"):
        _, reward, *_ = env.step(action)
    assert reward == 1.0
    assert all(c["status"] == "ok" for c in env.unwrapped.trace.calls)


def test_e1_instance_budget_is_enforced() -> None:
    canonical = call("submit_decision", vendor_id="V-Approved-2", chassis_id="CH-4",
                     gpu_id="GPU-7")  # 3850: fine at budget 4000, over budget 2000
    env = gym.make("AgentFloor/E1-v0")
    env.reset(seed=0, options={"variant": "i1"})
    assert json.loads(env.step(canonical)[0])["status"] == "error"
    env.reset(seed=0, options={"variant": "v0"})
    assert json.loads(env.step(canonical)[0])["status"] == "ok"


def test_e1_accepts_every_valid_bundle_and_no_invalid_one() -> None:
    env = gym.make("AgentFloor/E1-v0").unwrapped
    env.reset(seed=0, options={"variant": "v0"})
    db = env.trace.db
    vendors = [r for r in db.records if r.startswith("V-")]
    accepted = []
    for vendor in vendors:
        for chassis in ("CH-4", "CH-5"):
            for gpu in ("GPU-7", "GPU-8", "GPU-9"):
                decision = {"vendor_id": vendor, "chassis_id": chassis, "gpu_id": gpu}
                if env._toolkit.judge_submission(decision):
                    accepted.append((vendor, chassis, gpu))
    assert len(accepted) == 6  # 3 approved vendors x 2 compatible chassis/GPU pairs
    assert all(v != "V-Discount-3" and g != "GPU-8" for v, _, g in accepted)


def test_failure_classes() -> None:
    assert play("A1", [call("delete_everything")] + ["P104 is active."])[1][
        "verdict"]["failure_class"] == "F1"
    assert play("A1", [call("lookup_record", record_id=104), "active"])[1][
        "verdict"]["failure_class"] == "F2"
    _, info = play("B1", [call("search_records", query="Alpha Sensor")] * 4)
    assert info["verdict"]["failure_class"] == "F4" and info["termination"] == (
        "step_budget_exhausted")


def test_repair_turn_allows_one_corrected_malformed_call() -> None:
    reward, _ = play("A1", [call("lookup_record", record_id=104),
                            call("lookup_record", record_id="P104")])
    assert reward == 0.0  # budget of 2 used up before answering
    reward, info = play("B1", [call("search_records", query=["Alpha"]),
                               call("search_records", query="Alpha Sensor"),
                               call("lookup_record", record_id="P104"),
                               "P104 is active."])
    assert reward == 1.0, info["verdict"]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_candidates_hold_the_gold_steps_and_distractors(task_id: str) -> None:
    env = gym.make(floor_tasks.env_id(task_id)).unwrapped
    for variant in load_task(task_id).variant_names:
        env.reset(seed=0, options={"variant": variant})
        candidates = env.candidate_actions()
        gold = solution(task_id, variant)
        assert set(gold) <= set(candidates) and len(candidates) > len(set(gold))
        assert candidates == env.candidate_actions() and len(set(candidates)) == len(candidates)
        distractor = next(c for c in candidates if c not in gold)
        env.reset(seed=0, options={"variant": variant})
        assert play(task_id, [distractor] * 12, variant)[0] == 0.0


def test_oversized_turns_are_refused_not_truncated() -> None:
    env = gym.make("AgentFloor/D1-v0")
    env.reset(seed=0, options={"variant": "v0"})
    calls = [call_dict("lookup_record", record_id="SUP-11")] * 40
    obs, _, _, _, info = env.step(json.dumps(calls))
    lines = [json.loads(line) for line in obs.splitlines()]
    assert len(lines) == 33 and "only the first 32" in lines[0]["error"]["message"]
    assert info["invalid_action"]
    obs, *_ = env.step(call("lookup_record", record_id="S" * 10_000))
    envelope = json.loads(obs)
    assert envelope["error"]["type"] == "arguments_too_large" and len(obs) < 1000


# ---------------------------------------------------------------- issue 10: reference semantics


@pytest.mark.parametrize("inputs", [{"a": "12", "b": 8}, {"a": 12}, {"a": 12, "b": 8, "c": 1},
                                    {"a": True, "b": 8}])
def test_argument_shape_errors_are_malformed_calls(inputs: dict) -> None:
    env = gym.make("AgentFloor/A3-v0")
    env.reset(seed=0, options={"variant": "v0"})
    obs, _, _, _, info = env.step(call("compute_value", operation="multiply", inputs=inputs))
    assert json.loads(obs)["error"]["type"] == "schema_validation_error"
    assert info["invalid_action"]
    _, reward, _, _, info = env.step("The total cost is 96.")
    assert reward == 0.0
    assert {"must_call", "valid_arguments"} <= failed(info)
    assert info["verdict"]["failure_class"] == "F2"


def test_weighted_score_shape_errors_are_malformed() -> None:
    env = gym.make("AgentFloor/C3-v0")
    env.reset(seed=0, options={"variant": "v0"})
    for inputs in ({"values": {"x": "70"}, "weights": {"x": 1}}, {"values": {"x": 70}},
                   {"values": {"x": 70}, "weights": {"x": 1}, "extra": 1}):
        obs, _, _, _, info = env.step(call("compute_value", operation="weighted_score",
                                           inputs=inputs))
        assert json.loads(obs)["error"]["type"] == "schema_validation_error"
        assert info["invalid_action"]


def test_failed_lookup_does_not_count_as_calling_the_tool() -> None:
    reward, info = play("A1", [call("lookup_record", record_id="P999"), "P104 is active."])
    assert reward == 0.0 and "must_call" in failed(info)


@pytest.mark.parametrize("task_id, steps, answer", [
    ("D1", 1, "I would not select SUP-11 (lead time 7 days); the selected supplier is SUP-12."),
    ("D3", 2, "Not choosing HP-5 (uptime too low). Selected plan: HP-2."),
    ("E3", 3, "I did not choose CI-9 because it is in the west region. Selected instance: CI-4."),
    ("E3", 3, "CI-9 was ruled out (west). Selected instance: CI-4, instead of CI-9."),
    ("D5", 3, "Rejected CN-2 (no encryption); the selected connector is CN-5."),
])
def test_rejecting_a_distractor_in_words_passes(task_id: str, steps: int, answer: str) -> None:
    reward, info = play(task_id, solution(task_id)[:steps] + [answer])
    assert reward == 1.0, info["verdict"]


@pytest.mark.parametrize("task_id, steps, answer, label", [
    ("D1", 1, "I select SUP-11 and SUP-12.", "distractor_selected"),
    ("D1", 1, "The selected supplier is SUP-12; I would also pick SUP-13.", "final_answer"),
    ("D3", 2, "Selected plan: HP-5.", "distractor_selected"),
    ("E3", 3, "I would not choose CI-4. Selected instance: CI-9.", "distractor_selected"),
])
def test_choosing_a_distractor_or_two_candidates_fails(task_id: str, steps: int, answer: str,
                                                       label: str) -> None:
    reward, info = play(task_id, solution(task_id)[:steps] + [answer])
    assert reward == 0.0 and label in failed(info)


@pytest.mark.parametrize("task_id, answer, passes", [
    ("A01", "It is a bug, not a feature_request.", True),
    ("A01", "Category: bug (not billing).", True),
    ("A01", "This is not a bug; it is an access_issue.", False),
    ("A01", "It could be a bug or a feature_request.", False),
    ("A01", "Category: bug or billing", False),
    ("A04", "Mixed: positive about the hardware, negative about the software.", True),
    ("A04", "The sentiment is mixed, not negative.", True),
    ("A04", "Not mixed; the review is negative.", False),
    ("A04", "Positive or mixed.", False),
])
def test_label_answers_read_negation_and_hedging(task_id: str, answer: str, passes: bool) -> None:
    reward, info = play(task_id, [answer])
    assert reward == (1.0 if passes else 0.0), info["verdict"]


def test_compare_records_ranks_iso_dates_and_strings() -> None:
    env = gym.make("AgentFloor/C2-v0")
    env.reset(seed=0, options={"variant": "v0"})
    ids = ["DM-7", "DM-8", "DM-9"]
    obs, *_ = env.step(call("compare_records", record_ids=ids, criterion="last_updated"))
    assert json.loads(obs)["result"]["best_id"] == "DM-8"
    obs, *_ = env.step(call("compare_records", record_ids=ids, criterion="last_updated",
                            direction="asc"))
    assert json.loads(obs)["result"]["best_id"] == "DM-9"
    obs, *_ = env.step(call("compare_records", record_ids=ids, criterion="approved_version"))
    assert json.loads(obs)["result"]["best_id"] == "DM-8"
    obs, _, _, _, info = env.step(call("compare_records", record_ids=[], criterion="name"))
    assert json.loads(obs)["error"]["type"] == "schema_validation_error"
    assert info["invalid_action"]
    reward, info = play("C2", [
        call("search_records", query="Delta Module"),
        call("compare_records", record_ids=ids, criterion="last_updated"),
        "DM-8 is the most recent; record_id DM-8, approved_version v2.4."])
    assert reward == 1.0, info["verdict"]


def test_submission_values_compare_exactly() -> None:
    reward, info = play("A5", [call("submit_decision", record_id="REQ-220", action="Approve"),
                               "Approved."])
    assert reward == 0.0 and "submission" in failed(info)
    reward, _ = play("B5", [call("search_records", query="Omega Connector"),
                            call("submit_decision", record_id="oc-77", action="process"), "ok"])
    assert reward == 0.0


def test_e1_needs_the_constraint_call_on_the_chosen_vendor() -> None:
    gold = solution("E1")
    reward, info = play("E1", gold[:2] + [gold[3]])  # skip check_constraint, approved was read
    assert reward == 0.0 and "constraints_checked" in failed(info)


def test_d1_one_comparison_does_not_inspect_every_candidate() -> None:
    reward, info = play("D1", [
        call("compare_records", record_ids=["SUP-11", "SUP-12", "SUP-13"],
             criterion="reliability_score"),
        call("lookup_record", record_id="SUP-12"),
        "The selected supplier is SUP-12."])
    assert reward == 0.0 and "all_inspected" in failed(info)


def test_e4_compare_must_come_before_compute() -> None:
    gold = solution("E4")
    reward, info = play("E4", [gold[0], gold[1], gold[3], gold[2], gold[4], gold[5]])
    assert reward == 0.0 and "stages_in_order" in failed(info)


def test_tool_results_follow_the_reference() -> None:
    from agentworld_envs.protocol.tool_calls import ToolCall
    from floor_tasks.database import load_fixture
    from floor_tasks.tools import FloorToolkit

    kit = FloorToolkit(load_fixture("A1_product_catalog"), lambda decision: False)
    listed = kit.dispatch(ToolCall("list_options", {}), {"list_options"}, "x")
    assert listed["status"] == "ok" and listed["result"]["options"] == []
    kit = FloorToolkit(load_fixture("B1_product_catalog"), lambda decision: False)
    allowed = {"search_records", "compute_value"}
    assert kit.dispatch(ToolCall("search_records", {"query": "alpha  sensor"}), allowed,
                        "x")["result"]["matches"] == []
    scored = kit.dispatch(ToolCall("compute_value", {"operation": "weighted_score", "inputs": {
        "values": {"a": 10}, "weights": {"a": 0.5, "b": 0.5}}}), allowed, "x")
    assert scored["status"] == "ok" and scored["result"]["value"] == 5
    assert scored["result"]["ignored_weights"] == ["b"]


def test_e4_compliance_check_must_follow_the_score() -> None:
    gold = solution("E4")
    reward, info = play("E4", gold[:3] + [gold[4], gold[3], gold[5]])
    assert reward == 0.0 and "stages_in_order" in failed(info)


def test_listed_or_compared_values_do_not_check_a_constraint() -> None:
    reward, info = play("D3", [call("list_options"), "Selected plan: HP-2."])
    assert reward == 0.0 and "constraints_checked" in failed(info)
    reward, info = play("D1", [
        json.dumps([{"name": "lookup_record", "arguments": {"record_id": i, "fields": ["name"]}}
                    for i in ("SUP-11", "SUP-12", "SUP-13")]),
        call("compare_records", record_ids=["SUP-11", "SUP-12", "SUP-13"],
             criterion="lead_time_days"),
        "Selected supplier: SUP-12."])
    assert reward == 0.0 and "constraints_checked" in failed(info)


def test_e2_comparing_on_the_future_requirement_considers_it() -> None:
    reward, info = play("E2", [
        call("compare_records", record_ids=["FW-1", "FW-3"], criterion="reporting_plugin_support"),
        call("lookup_record", record_id="FW-3", fields=["throughput_mbps"]),
        call("check_constraint", record_id="FW-3", constraint_name="current_throughput_min"),
        call("submit_decision", framework_id="FW-3")])
    assert reward == 1.0, info["verdict"]


def test_tool_edge_cases_follow_the_reference() -> None:
    from agentworld_envs.protocol.tool_calls import ToolCall
    from floor_tasks.database import load_fixture
    from floor_tasks.tools import FloorToolkit

    kit = FloorToolkit(load_fixture("D3_hosting_plans"), lambda decision: False)
    allowed = {"compare_records", "compute_value", "list_options", "lookup_record"}

    def run(name: str, **arguments: Any) -> dict:
        return kit.dispatch(ToolCall(name, arguments), allowed, "x")

    ids = ["HP-1", "HP-2", "HP-3"]
    gpu = run("compare_records", record_ids=ids, criterion="gpu_available")["result"]
    assert gpu["best_id"] == "HP-2"  # true ranks above false; ties go to the first given
    assert run("compare_records", record_ids=ids, criterion="gpu_available",
               direction="asc")["result"]["best_id"] == "HP-1"
    assert run("list_options", option_set="")["result"]["options"] == run(
        "list_options")["result"]["options"]
    assert run("lookup_record", record_id="HP-2", fields=[])["result"]["fields"][
        "monthly_price"] == 280
    for inputs in ({"values": {}, "weights": {"a": 1}}, {"values": {"a": 1}, "weights": {}}):
        empty = run("compute_value", operation="weighted_score", inputs=inputs)
        assert (empty["status"], empty["error"]["type"]) == ("error", "missing_inputs")
    bad = run("compute_value", operation="weighted_score",
              inputs={"values": {"a": 1}, "weights": {"a": 1, "b": "x"}})
    assert bad["error"]["type"] == "schema_validation_error"
    unweighted = run("compute_value", operation="weighted_score",
                     inputs={"values": {"a": 10, "b": 5}, "weights": {"a": 0.5}})
    assert unweighted["result"]["value"] == 5


def test_compare_records_does_not_rank_values_that_do_not_order() -> None:
    from agentworld_envs.protocol.tool_calls import ToolCall
    from floor_tasks.database import FixtureDB
    from floor_tasks.tools import FloorToolkit

    db = FixtureDB({"records": {"R-1": {"v": 3}, "R-2": {"v": "high"}, "R-3": {}}})
    kit = FloorToolkit(db, lambda decision: False)
    out = kit.dispatch(ToolCall("compare_records", {"record_ids": ["R-1", "R-2", "R-3"],
                                                    "criterion": "v"}), {"compare_records"}, "x")
    assert out["status"] == "ok" and out["result"]["best_id"] is None
    assert [r["criterion_value"] for r in out["result"]["comparison"]] == [3, "high", None]
