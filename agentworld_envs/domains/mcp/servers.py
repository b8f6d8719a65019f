"""Fictional MCP tool servers with injected perturbations, for the mcp domain.

Each seed gives one server from one of five families (inventory, calendar, ticketing, CRM,
fleet), with invented records, a question whose reference answer lies in those records, and one
or two control instructions (tool errors, rate limits, empty results, stale data) aimed at a
tool, either on a fixed turn or with a probability. The records are also in ``scenario.mcp``,
which the executable twin (:mod:`agentworld_envs.domains.mcp.twin`) serves.

The candidate answers leak nothing to an agent that compares them: each wrong answer is the
same field of another record (or, for CRM, a value drawn like the right one), drawn so that
the right answer is exchangeable with the wrong ones. No offset, order, constant or rarity
among the candidates tells it apart; only the records do (tested in
``tests/sim/test_mcp_candidate_leaks.py``).

Example:
    >>> s = mcp_server_scenario(3)
    >>> s == mcp_server_scenario(3), 1 <= len(s.controls) <= 2, len(s.tools) == 3
    (True, True, True)
    >>> s.mcp.family, s.mcp.records[0] == json.loads(s.world.splitlines()[1])
    ('fleet', True)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentworld_envs.domains.names import (
    distinct,
    distinct_draws,
    fictional_person,
    fictional_word,
    pick,
    sample,
    shuffled,
)
from agentworld_envs.world.rewards import answer_matches
from agentworld_envs.world.scenario import Check, Control, McpServerRef, RewardSpec, Scenario

__all__ = ["FAMILIES", "PERTURBATIONS", "mcp_server_scenario"]

PERTURBATIONS = ("tool_error", "rate_limit", "empty_results", "stale_data")


@dataclass(frozen=True)
class _Server:
    family: str
    name: str
    tools: list[dict[str, Any]]
    records: list[dict[str, Any]]
    question: str
    answer: str
    match: str
    calls: list[tuple[str, dict[str, Any]]]
    wrong_answers: list[str]
    solved_by: int = 2
    """How many of the first ``calls`` the reference solution makes before it answers."""


def _tool(name: str, description: str, required: dict[str, str],
          optional: dict[str, str] | None = None) -> dict[str, Any]:
    """A tool schema; parameter types are given as ``"string"``, ``"integer"``, ..."""
    properties = {k: {"type": v} for k, v in {**required, **(optional or {})}.items()}
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties,
                           "required": list(required)}}


def _code(rng: np.random.Generator, prefix: str) -> str:
    return f"{prefix}-{int(rng.integers(1000, 10000))}"


def _inventory(rng: np.random.Generator, company: str) -> _Server:
    stocks = distinct(rng, range(900), 5)
    records = [{"sku": _code(rng, "SKU"), "name": f"{fictional_word(rng)} "
                f"{pick(rng, ['valve', 'bracket', 'sensor', 'gasket', 'pump'])}",
                "category": pick(rng, ["hardware", "fluidics", "electronics"]),
                "in_stock": stock, "location": f"Aisle {rng.integers(1, 40)}"}
               for stock in stocks]
    target, other, third = sample(rng, records, 3)
    return _Server(
        "inventory", f"{company.lower()}-inventory",
        [_tool("list_items", "List stock items, optionally in one category.", {},
               {"category": "string"}),
         _tool("get_item", "Get one stock item by SKU.", {"sku": "string"}),
         _tool("update_stock", "Add (or, when negative, remove) units of an item.",
               {"sku": "string", "delta": "integer"})],
        records, f"How many units of the {target['name']} (SKU {target['sku']}) are in stock "
                 "right now?",
        str(target["in_stock"]), "number",
        [("get_item", {"sku": target["sku"]}), ("get_item", {"sku": other["sku"]}),
         ("get_item", {"sku": third["sku"]})],
        [str(other["in_stock"]), str(third["in_stock"])], solved_by=1)


_STARTS = [f"{hour:02d}:{minute}" for hour in range(8, 18) for minute in ("00", "15", "30", "45")]


def _calendar(rng: np.random.Generator, company: str) -> _Server:
    starts = distinct(rng, _STARTS, 5)
    records = [{"event_id": _code(rng, "EVT"), "title": f"{fictional_word(rng)} "
                f"{pick(rng, ['review', 'sync', 'planning', 'retro'])}",
                "date": f"2026-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d}",
                "start": start, "organiser": fictional_person(rng)} for start in starts]
    target, other, third = sample(rng, records, 3)
    return _Server(
        "calendar", f"{company.lower()}-calendar",
        [_tool("list_events", "List the events on a date (YYYY-MM-DD).", {"date": "string"}),
         _tool("get_event", "Get one event by id.", {"event_id": "string"}),
         _tool("create_event", "Create an event.",
               {"title": "string", "date": "string", "start": "string"},
               {"duration_min": "integer"})],
        records, f"At what time does the '{target['title']}' on {target['date']} start?",
        target["start"], "contains",
        [("list_events", {"date": target["date"]}), ("get_event", {"event_id": target["event_id"]}),
         ("list_events", {"date": other["date"]})],
        [other["start"], third["start"]])


def _tickets(rng: np.random.Generator, company: str) -> _Server:
    records = [{"ticket_id": _code(rng, "TCK"), "title": f"{fictional_word(rng)} "
                f"{pick(rng, ['login fails', 'export hangs', 'sync drops', 'report wrong'])}",
                "status": pick(rng, ["open", "open", "closed"]),
                "assignee": person, "priority": f"P{rng.integers(1, 5)}"}
               for person in distinct_draws(rng, fictional_person, 5)]
    for record in records:
        record["comments"] = []
    target, other, third = sample(rng, records, 3)
    target["status"] = "open"
    return _Server(
        "tickets", f"{company.lower()}-tickets",
        [_tool("search_tickets", "Search tickets by text, optionally by status.",
               {"query": "string"}, {"status": "string"}),
         _tool("get_ticket", "Get one ticket by id.", {"ticket_id": "string"}),
         _tool("add_comment", "Comment on a ticket.", {"ticket_id": "string", "body": "string"})],
        records, f"Who is assigned to the open ticket {target['ticket_id']}, titled "
                 f"'{target['title']}'?",
        target["assignee"], "contains",
        [("search_tickets", {"query": target["title"], "status": "open"}),
         ("get_ticket", {"ticket_id": target["ticket_id"]}),
         ("get_ticket", {"ticket_id": other["ticket_id"]})],
        [other["assignee"], third["assignee"]])


def _crm(rng: np.random.Generator, company: str) -> _Server:
    client, rival = (f"{fictional_word(rng)} {pick(rng, ['Ltd', 'GmbH', 'Group', 'Co-op'])}"
                     for _ in range(2))
    account, rival_account = _code(rng, "ACC"), _code(rng, "ACC")
    # the answer, the client's lost deal and a rival's open deal: three values drawn alike
    largest, lost, rivals = (250 * v for v in distinct(rng, range(2, 400), 3))
    smaller = [250 * int(rng.integers(1, largest // 250)) for _ in range(3)]
    records = [{"deal_id": _code(rng, "DL"), "account_id": account, "value_eur": value,
                "stage": "open"} for value in sorted({*smaller, largest})]
    records.append({"deal_id": _code(rng, "DL"), "account_id": account,
                    "value_eur": lost, "stage": "lost"})
    records.append({"deal_id": _code(rng, "DL"), "account_id": rival_account,
                    "value_eur": rivals, "stage": "open"})
    return _Server(
        "crm", f"{company.lower()}-crm",
        [_tool("find_account", "Find accounts by company name.", {"name": "string"}),
         _tool("list_deals", "List an account's deals, optionally by stage.",
               {"account_id": "string"}, {"stage": "string"}),
         _tool("get_deal", "Get one deal by id.", {"deal_id": "string"})],
        [{"account_id": account, "name": client},
         {"account_id": rival_account, "name": rival}, *records],
        f"What is the value in euros of the largest open deal with {client}?",
        str(largest), "number",
        [("find_account", {"name": client}), ("list_deals", {"account_id": account,
                                                             "stage": "open"}),
         ("list_deals", {"account_id": account})],
        [str(lost), str(rivals)])


def _service_history(vehicle: dict[str, Any]) -> list[dict[str, Any]]:
    """Two past services of a vehicle, one and two years before its next one.

    They come from a generator seeded by the vehicle's own record, not from the scenario's
    stream, so adding them left every other draw of the fleet scenarios as it was.
    """
    number = int(vehicle["vehicle_id"].split("-")[1])
    rng = np.random.default_rng([number, vehicle["odometer_km"]])
    year, rest = vehicle["next_service"].split("-", 1)
    step = vehicle["odometer_km"] // int(rng.integers(4, 8))
    return [{"service_id": f"SRV-{number}-{n}", "vehicle_id": vehicle["vehicle_id"],
             "date": f"{int(year) - years}-{rest}",
             "odometer_km": vehicle["odometer_km"] - years * step,
             "work": pick(rng, ["annual inspection", "oil and filter change",
                                "brake pads replaced", "tyres replaced", "battery replaced"])}
            for n, years in enumerate((2, 1), start=1)]


_DATES = [f"2026-{month:02d}-{day:02d}" for month in range(1, 13) for day in range(1, 29)]


def _fleet(rng: np.random.Generator, company: str) -> _Server:
    depot = fictional_word(rng, 3)
    dates = distinct(rng, _DATES, 4)
    records = [{"vehicle_id": _code(rng, "VH"),
                "plate": f"{fictional_word(rng, 1)[:2].upper()}{rng.integers(10, 99)} "
                         f"{fictional_word(rng, 1)[:3].upper()}",
                "depot": depot, "odometer_km": int(rng.integers(5_000, 300_000)),
                "next_service": date} for date in dates]
    target, other, third = sample(rng, records, 3)
    return _Server(
        "fleet", f"{company.lower()}-fleet",
        [_tool("list_vehicles", "List the vehicles of a depot.", {"depot": "string"}),
         _tool("get_vehicle", "Get one vehicle by id.", {"vehicle_id": "string"}),
         _tool("get_service_history", "A vehicle's past services.", {"vehicle_id": "string"})],
        [*records, *(s for r in records for s in _service_history(r))],
        f"When is the vehicle with plate {target['plate']} next due for service?",
        target["next_service"], "contains",
        [("list_vehicles", {"depot": depot}), ("get_vehicle", {"vehicle_id": target["vehicle_id"]}),
         ("get_service_history", {"vehicle_id": target["vehicle_id"]})],
        [other["next_service"], third["next_service"]])


_FAMILIES: tuple[Callable[[np.random.Generator, str], _Server], ...] = (
    _inventory, _calendar, _tickets, _crm, _fleet)
FAMILIES = tuple(family.__name__.lstrip("_") for family in _FAMILIES)
"""The server families, as ``scenario.mcp.family`` names them."""


def _perturbations(rng: np.random.Generator, tools: list[str]) -> list[Control]:
    controls = []
    for _ in range(int(rng.integers(1, 3))):
        kind, tool = pick(rng, PERTURBATIONS), pick(rng, tools)
        if rng.random() < 0.5:
            controls.append(Control(kind=kind, tools=[tool], turns=[int(rng.integers(1, 4))]))
        else:
            controls.append(Control(kind=kind, tools=[tool],
                                    probability=pick(rng, [0.2, 0.35, 0.5])))
    return controls


def mcp_server_scenario(seed: int) -> Scenario:
    """The fictional, perturbed MCP server scenario of one seed (drawn again, from
    ``[seed, n]``, while its question would state its own answer: a calendar's start time
    ``11:15`` reads as its date ``2026-11-15``)."""
    for attempt in itertools.count():
        rng = np.random.default_rng([seed, attempt] if attempt else seed)
        company = fictional_word(rng)
        server = pick(rng, _FAMILIES)(rng, company)
        if not answer_matches(server.question, server.answer, server.match):
            break
    names = [t["name"] for t in server.tools]
    records = "\n".join(json.dumps(r, ensure_ascii=False) for r in server.records)
    calls = [*dict.fromkeys(json.dumps({"name": n, "arguments": a}, ensure_ascii=False)
                            for n, a in server.calls)]
    answers = [*dict.fromkeys(f"The answer is {a}."
                              for a in (server.answer, *server.wrong_answers))]
    candidates, solution = shuffled(rng, [*calls, *answers],
                                    [*range(server.solved_by), len(calls)])
    return Scenario(
        id=f"mcp-gen-{seed}", domain="mcp",
        instruction=f"{server.question} Use the {server.name} server's tools, then answer in "
                    "one sentence.",
        tools=server.tools,
        world=f"MCP server {server.name} (v1.{rng.integers(0, 9)}), records:\n{records}",
        reference_answer=server.answer, controls=_perturbations(rng, names),
        reward=RewardSpec(checks=[Check(check="answer_matches", match=server.match,
                                        excludes=server.wrong_answers),
                                  Check(check="answer_observed", match=server.match)]),
        candidate_actions=candidates, solution=solution, fictional=True,
        mcp=McpServerRef(family=server.family, records=server.records))
