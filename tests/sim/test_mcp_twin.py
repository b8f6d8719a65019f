"""The executable twin of the generated MCP servers, and the episodes measured against it."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import McpTwin, stale
from agentworld_envs.world.controls import fired_controls
from agentworld_envs.world.scenario import Control, Scenario

FAMILIES = ("inventory", "calendar", "tickets", "crm", "fleet")


def scenario_of(family: str, skip: int = 0) -> Scenario:
    """The ``skip``-th generated scenario of a family."""
    found = (s for s in map(mcp_server_scenario, range(500)) if s.mcp.family == family)
    for _ in range(skip):
        next(found)
    return next(found)


def call(tool: str, /, **arguments: Any) -> str:
    return json.dumps({"name": tool, "arguments": arguments})


def run(twin: McpTwin, tool: str, controls: tuple[Control, ...] = (), /,
        **arguments: Any) -> Any:
    return json.loads(twin.step(call(tool, **arguments), controls).observation)


def records(scenario: Scenario, key: str) -> list[dict[str, Any]]:
    return [r for r in scenario.mcp.records if next(iter(r)) == key]


def error_code(result: Any) -> str:
    return result["error"]["code"]


def test_same_seed_and_actions_give_the_same_observations_and_twins_are_independent() -> None:
    scenario = scenario_of("inventory")
    sku = records(scenario, "sku")[0]["sku"]
    actions = [call("update_stock", sku=sku, delta=7), call("get_item", sku=sku),
               call("list_items"), call("get_item", sku="SKU-0")]
    first, second = McpTwin(scenario), McpTwin(mcp_server_scenario(int(scenario.id[8:])))
    assert [first.step(a) for a in actions] == [second.step(a) for a in actions]
    run(second, "update_stock", sku=sku, delta=100)
    stock = records(scenario, "sku")[0]["in_stock"]
    assert run(first, "get_item", sku=sku)["in_stock"] == stock + 7
    assert run(McpTwin(scenario), "get_item", sku=sku) == records(scenario, "sku")[0]


def test_inventory_reads_the_records_and_sees_its_stock_updates() -> None:
    scenario = scenario_of("inventory")
    twin, items = McpTwin(scenario), records(scenario, "sku")
    category = items[0]["category"]
    listed = run(twin, "list_items", category=category.upper())
    assert listed == {"items": [i for i in items if i["category"] == category],
                      "count": sum(i["category"] == category for i in items)}
    assert run(twin, "list_items")["count"] == len(items)
    item = items[1]
    assert run(twin, "get_item", sku=item["sku"]) == item
    updated = run(twin, "update_stock", sku=item["sku"], delta=-item["in_stock"])
    assert updated == {**item, "in_stock": 0} == run(twin, "get_item", sku=item["sku"])
    refused = run(twin, "update_stock", sku=item["sku"], delta=-1)
    assert error_code(refused) == "invalid_arguments" and refused["error"]["field"] == "delta"
    assert run(twin, "get_item", sku=item["sku"])["in_stock"] == 0


def test_calendar_lists_by_date_and_created_events_take_the_next_number() -> None:
    scenario = scenario_of("calendar")
    twin, events = McpTwin(scenario), records(scenario, "event_id")
    date = events[0]["date"]
    assert run(twin, "list_events", date=date)["items"] == [e for e in events if e["date"] == date]
    assert run(twin, "get_event", event_id=events[2]["event_id"]) == events[2]
    top = max(int(e["event_id"][4:]) for e in events)
    created = run(twin, "create_event", title="Launch", date=date, start="09:30")
    assert created == {"event_id": f"EVT-{top + 1}", "title": "Launch", "date": date,
                       "start": "09:30", "duration_min": 30}
    assert run(twin, "create_event", title="B", date=date, start="10:00",
               duration_min=15)["event_id"] == f"EVT-{top + 2}"
    assert created in run(twin, "list_events", date=date)["items"]
    assert run(twin, "get_event", event_id=created["event_id"]) == created
    for bad in ({"date": "2026-2-3"}, {"date": "2026-02-30"}, {"start": "9am"}):
        arguments = {"title": "X", "date": date, "start": "09:00", **bad}
        result = run(twin, "create_event", **arguments)
        assert result["error"]["field"] == next(iter(bad)), result


def test_tickets_search_by_text_and_status_and_show_added_comments() -> None:
    scenario = scenario_of("tickets")
    twin, tickets = McpTwin(scenario), records(scenario, "ticket_id")
    target = next(t for t in tickets if t["status"] == "open")
    found = run(twin, "search_tickets", query=target["title"].split()[1].lower(), status="OPEN")
    assert target in found["items"]
    assert all(t["status"] == "open" for t in found["items"])
    assert run(twin, "search_tickets", query="no such words")["items"] == []
    ticket_id = target["ticket_id"]
    first = run(twin, "add_comment", ticket_id=ticket_id, body="Looking into it.")
    second = run(twin, "add_comment", ticket_id=tickets[-1]["ticket_id"], body="Me too.")
    assert first == {"comment_id": "CMT-1", "ticket_id": ticket_id, "body": "Looking into it."}
    assert second["comment_id"] == "CMT-2"
    assert run(twin, "get_ticket", ticket_id=ticket_id) == {**target, "comments": [first]}


def test_crm_finds_accounts_and_lists_their_deals() -> None:
    scenario = scenario_of("crm")
    twin = McpTwin(scenario)
    (account, rival), deals = records(scenario, "account_id"), records(scenario, "deal_id")
    assert run(twin, "find_account", name=account["name"][:4].lower())["items"] == [account]
    assert run(twin, "find_account", name=rival["name"])["items"] == [rival]
    own = [d for d in deals if d["account_id"] == account["account_id"]]
    assert 0 < len(own) < len(deals)  # the rival's deal is served, to another account
    listed = run(twin, "list_deals", account_id=account["account_id"], stage="open")
    assert listed["items"] == [d for d in own if d["stage"] == "open"]
    assert max(d["value_eur"] for d in listed["items"]) == int(scenario.reference_answer)
    assert run(twin, "list_deals", account_id=account["account_id"])["count"] == len(own)
    assert run(twin, "get_deal", deal_id=deals[-1]["deal_id"]) == deals[-1]
    assert run(twin, "list_deals", account_id="ACC-0") == {"error": {
        "code": "not_found", "message": "no account with account_id 'ACC-0'"}}


def test_fleet_serves_vehicles_and_the_generated_service_history() -> None:
    scenario = scenario_of("fleet")
    twin, vehicles = McpTwin(scenario), records(scenario, "vehicle_id")
    services = records(scenario, "service_id")
    assert run(twin, "list_vehicles", depot=vehicles[0]["depot"])["items"] == vehicles
    vehicle = vehicles[1]
    assert run(twin, "get_vehicle", vehicle_id=vehicle["vehicle_id"]) == vehicle
    history = run(twin, "get_service_history", vehicle_id=vehicle["vehicle_id"])
    assert history["count"] == 2
    assert history["items"] == [s for s in services if s["vehicle_id"] == vehicle["vehicle_id"]]
    assert [s["date"] < vehicle["next_service"] for s in history["items"]] == [True, True]
    assert all(json.dumps(s) in scenario.world for s in services)  # the world model sees it
    assert error_code(run(twin, "get_service_history", vehicle_id="VH-0")) == "not_found"


def test_generator_records_hold_the_twins_data_deterministically() -> None:
    for family in FAMILIES:
        scenario = scenario_of(family)
        assert scenario == mcp_server_scenario(int(scenario.id[8:]))
        lines = scenario.world.splitlines()[1:]
        assert [json.loads(line) for line in lines] == scenario.mcp.records
    assert all(t["comments"] == [] for t in records(scenario_of("tickets"), "ticket_id"))


@pytest.mark.parametrize(("arguments", "field", "message"), [
    ({}, "sku", "missing required argument 'sku'"),
    ({"sku": "SKU-1", "delta": "3"}, "delta", "argument 'delta' must be of type integer, "
                                              "got string"),
    ({"sku": "SKU-1", "delta": True}, "delta", "argument 'delta' must be of type integer, "
                                               "got boolean"),
    ({"sku": "SKU-1", "delta": 1, "note": "x"}, "note", "unknown argument 'note'"),
])
def test_arguments_are_checked_against_the_tool_schema(arguments: dict, field: str,
                                                       message: str) -> None:
    twin = McpTwin(scenario_of("inventory"))
    assert run(twin, "update_stock", **arguments) == {"error": {
        "code": "invalid_arguments", "message": message, "field": field}}


def test_unknown_ids_tools_and_unreadable_actions_get_error_objects() -> None:
    scenario = scenario_of("inventory")
    twin, item = McpTwin(scenario), records(scenario, "sku")[0]
    assert run(twin, "get_item", sku="SKU-1") == {"error": {
        "code": "not_found", "message": "no item with sku 'SKU-1'"}}
    mixed = json.dumps([json.loads(call("update_stock", sku=item["sku"], delta=5)),
                        json.loads(call("delete_item", sku=item["sku"]))])
    real = twin.step(mixed)
    assert json.loads(real.observation) == {"error": {
        "code": "unknown_tool",
        "message": "unknown tool 'delete_item'; available tools: list_items, get_item, "
                   "update_stock"}}
    assert not real.terminated and run(twin, "get_item", sku=item["sku"]) == item  # none ran
    for action in ('{"name": "get_item", "arguments": {"sku": ', 42):
        real = twin.step(action)
        assert error_code(json.loads(real.observation)) == "invalid_request"
        assert not real.terminated


def test_several_calls_answer_one_line_each_in_order() -> None:
    scenario = scenario_of("inventory")
    twin, items = McpTwin(scenario), records(scenario, "sku")
    action = json.dumps([{"name": "get_item", "arguments": {"sku": items[2]["sku"]}},
                         {"name": "get_item", "arguments": {"sku": "SKU-1"}},
                         {"name": "update_stock", "arguments": {"sku": items[2]["sku"],
                                                                "delta": 1}}])
    lines = [json.loads(line) for line in twin.step(action).observation.splitlines()]
    assert lines == [items[2], {"error": {"code": "not_found",
                                          "message": "no item with sku 'SKU-1'"}},
                     {**items[2], "in_stock": items[2]["in_stock"] + 1}]


def test_a_final_answer_ends_the_real_episode() -> None:
    real = McpTwin(scenario_of("crm")).step("The largest open deal is worth 5000 euros.")
    assert (real.observation, real.terminated, real.ending) == ("", True, "final_answer")


@pytest.mark.parametrize("kind", ["tool_error", "rate_limit"])
def test_failing_controls_give_their_error_and_change_nothing(kind: str) -> None:
    scenario = scenario_of("inventory")
    twin, item = McpTwin(scenario), records(scenario, "sku")[0]
    controls = (Control(kind=kind, tools=["update_stock"]),)
    expected = {"tool_error": {"error": {
        "code": "internal_error",
        "message": "internal error while running update_stock; nothing was changed"}},
        "rate_limit": {"error": {"code": "rate_limited",
                                 "message": "rate limit exceeded; retry after 30 seconds",
                                 "retry_after_s": 30}}}[kind]
    assert run(twin, "update_stock", controls, sku=item["sku"], delta=50) == expected
    assert run(twin, "update_stock", controls, sku=item["sku"], delta="x") == expected
    assert run(twin, "get_item", controls, sku=item["sku"]) == item  # other tools unaffected


def test_empty_results_empty_the_reads_and_leave_writes_alone() -> None:
    scenario = scenario_of("crm")
    twin = McpTwin(scenario)
    account, deal = records(scenario, "account_id")[0], records(scenario, "deal_id")[0]
    empty = (Control(kind="empty_results"),)
    assert run(twin, "find_account", empty, name=account["name"]) == {"items": [], "count": 0}
    assert run(twin, "list_deals", empty, account_id=account["account_id"])["count"] == 0
    assert run(twin, "get_deal", empty, deal_id=deal["deal_id"]) == {"error": {
        "code": "not_found", "message": f"no deal with deal_id '{deal['deal_id']}'"}}
    assert run(twin, "get_deal", deal_id=deal["deal_id"]) == deal
    inventory = scenario_of("inventory")
    twin, item = McpTwin(inventory), records(inventory, "sku")[0]
    assert run(twin, "update_stock", empty, sku=item["sku"], delta=2)["in_stock"] == \
        item["in_stock"] + 2


def test_stale_data_reads_an_older_snapshot_by_a_fixed_rule() -> None:
    scenario = scenario_of("fleet")
    twin, vehicle = McpTwin(scenario), records(scenario, "vehicle_id")[0]
    old = (Control(kind="stale_data", tools=["get_vehicle"]),)
    result = run(twin, "get_vehicle", old, vehicle_id=vehicle["vehicle_id"])
    assert result == {**vehicle, "odometer_km": vehicle["odometer_km"] * 9 // 10,
                      "next_service": str(np.datetime64(vehicle["next_service"]) - 7)}
    assert result == stale(vehicle) != vehicle
    inventory = scenario_of("inventory")
    twin, item = McpTwin(inventory), records(inventory, "sku")[0]
    run(twin, "update_stock", sku=item["sku"], delta=100)  # not in the older snapshot
    old = (Control(kind="stale_data"),)
    assert run(twin, "get_item", old, sku=item["sku"])["in_stock"] == item["in_stock"] * 9 // 10
    assert run(twin, "update_stock", old, sku=item["sku"], delta=1)["in_stock"] == \
        item["in_stock"] + 101


def test_the_first_applicable_control_wins_and_custom_ones_are_for_the_model_only() -> None:
    scenario = scenario_of("inventory")
    twin, item = McpTwin(scenario), records(scenario, "sku")[0]
    controls = (Control(kind="custom", note="say hello"),
                Control(kind="rate_limit", tools=["list_items"]),
                Control(kind="tool_error"), Control(kind="empty_results"))
    assert error_code(run(twin, "list_items", controls)) == "rate_limited"
    assert error_code(run(twin, "get_item", controls, sku=item["sku"])) == "internal_error"
    assert run(twin, "get_item", controls[:1], sku=item["sku"]) == item


def test_fired_controls_returns_the_controls_with_the_same_draws() -> None:
    controls = [Control(kind="rate_limit", probability=0.5),
                Control(kind="tool_error", tools=["get_item"], turns=[2]),
                Control(kind="stale_data", tools=["list_items"], probability=0.5)]
    rng, replay = np.random.default_rng(3), np.random.default_rng(3)
    for turn in range(1, 6):
        fired = fired_controls(controls, turn, ["get_item"], rng)
        first, _ = replay.random() < 0.5, replay.random()  # the third draws but never applies
        hits = [first, turn == 2, False]
        assert fired == [c for c, hit in zip(controls, hits, strict=True) if hit]
    assert rng.random() == replay.random()


def hybrid_env(scenario: Scenario, **settings: Any) -> gym.Env:
    return gym.make("AgentWorld/MCP-v0", scenarios=[scenario], backend="scripted",
                    mode="hybrid", reveal_reference=True, **settings)


def test_hybrid_episode_on_a_generated_server_is_measured_against_the_twin() -> None:
    scenario = mcp_server_scenario(5)
    assert all(c.turns for c in scenario.controls)
    env = hybrid_env(scenario)
    env.reset(seed=0, options={"scenario": scenario})
    twin = McpTwin(scenario)
    for action in scenario.solution_actions[:-1]:
        observation, _, terminated, _, info = env.step(action)
        truth = twin.step(action, [c for c in scenario.controls
                                             if c.turns == [info["turn"]]]).observation
        assert observation == info["real_observation"] == truth
        assert info["observation_source"] == "real" and not terminated
        assert info["fidelity"]["real_json"] and not info["fidelity"]["predicted_json"]
    _, reward, terminated, _, info = env.step(scenario.solution_actions[-1])
    assert terminated and reward == 1.0 and info["termination"] == "final_answer"
    assert info["real_observation"] == ""


def test_a_probability_control_fires_from_the_episodes_seeded_rng_in_the_twin() -> None:
    scenario = scenario_of("inventory").model_copy(update={"controls": []})
    item = records(scenario, "sku")[0]
    env = hybrid_env(scenario, controls=[{"kind": "rate_limit", "tools": ["get_item"],
                                          "probability": 0.5}])
    action = call("get_item", sku=item["sku"])

    def episode(seed: int) -> list[bool]:
        env.reset(seed=seed, options={"scenario": scenario})
        fired = []
        for _ in range(4):
            info = env.step(action)[4]
            limited = json.loads(info["real_observation"]).get("error", {}).get("code")
            assert (limited == "rate_limited") == bool(info["controls"])
            fired.append(bool(info["controls"]))
        return fired

    runs = [episode(seed) for seed in range(4)]
    assert runs == [episode(seed) for seed in range(4)]
    assert any(any(r) for r in runs) and not all(all(r) for r in runs)


def test_only_generated_servers_have_a_twin() -> None:
    domain = get_domain("mcp")
    assert all(domain.start_reality(s, 10) is None for s in domain.builtin.values())
    assert isinstance(domain.start_reality(mcp_server_scenario(0), 10), McpTwin)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                     | st.text(max_size=12), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
_SERVERS = {family: scenario_of(family) for family in FAMILIES}


@settings(max_examples=150, deadline=None)
@given(family=st.sampled_from(FAMILIES), name=st.sampled_from(
    [n for s in _SERVERS.values() for n in s.tool_names] + ["nope"]),
    arguments=st.dictionaries(st.sampled_from(["sku", "delta", "date", "start", "title",
                                               "event_id", "ticket_id", "body", "query",
                                               "status", "name", "account_id", "stage",
                                               "deal_id", "vehicle_id", "depot", "category",
                                               "duration_min", "x"]), _JSON, max_size=4),
    kind=st.sampled_from(["tool_error", "rate_limit", "empty_results", "stale_data", None]))
def test_every_call_gets_one_json_line_and_never_raises(family: str, name: str,
                                                        arguments: dict, kind: str | None) -> None:
    controls = (Control(kind=kind),) if kind else ()
    twin = McpTwin(_SERVERS[family])
    real = twin.step(call(name, **arguments), controls)
    assert "error" in json.loads(real.observation) or name in twin.tools
    assert "\n" not in real.observation and not real.terminated
