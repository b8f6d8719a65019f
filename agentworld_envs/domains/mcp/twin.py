"""The executable twin of the generated MCP servers: their three tools, run on their records.

Every generated ``mcp`` scenario (:mod:`agentworld_envs.domains.mcp.servers`) is
also served by :class:`McpTwin`, a deterministic, stateful implementation of its family's tools
on the scenario's invented records, so that simulated steps are measured against the true
result (``info["fidelity"]``), hybrid mode can fall back to it, and ``reveal_reference=True``
exports it as ``info["real_observation"]``. A tool result is one line of JSON: a lookup
(``get_item``) gives the record; a listing or search gives ``{"items": [...], "count": n}``
(ids match exactly, other filters and searches ignore case); a write gives the record it
changed or created (created ids take the next number: ``EVT-<highest + 1>``, ``CMT-1``,
``CMT-2``, ...), and later reads see it. Every failure is
``{"error": {"code": ..., "message": ...}}``: ``not_found`` names the missing id,
``invalid_arguments`` (a missing, unknown or wrongly typed argument, checked against the tool's
schema, or a value the tool refuses) adds the ``field``, ``unknown_tool`` lists the available
tools and ``invalid_request`` is an action that cannot be read or holds more than
:data:`MAX_CALLS` calls; such an action, or one with an unknown tool, runs none of its calls. An
action with several calls gets one line per call, in order. A final answer (no tool call) ends
the real episode with an empty observation. Controls that fire on a turn apply to the calls of
their tools, the first applicable one winning:
``tool_error`` gives ``internal_error`` and ``rate_limit`` gives ``rate_limited`` with
``"retry_after_s": 30``, both changing nothing; ``empty_results`` makes a listing
``{"items": [], "count": 0}`` and a lookup ``not_found``; ``stale_data`` runs a read on the
records as they were before the episode, with every whole number 10% lower (rounded down) and
every date a week earlier; writes ignore these last two, and ``custom`` controls.

Example:
    >>> from agentworld_envs.domains.mcp.servers import mcp_server_scenario
    >>> twin = McpTwin(mcp_server_scenario(0))  # an inventory server
    >>> sku = twin.records.rows("sku")[0]["sku"]
    >>> twin.step(f'{{"name": "update_stock", "arguments": {{"sku": "{sku}", "delta": 5}}}}'
    ...           ).observation == twin.step(f'{{"name": "get_item", "arguments": '
    ...                                      f'{{"sku": "{sku}"}}}}').observation
    True
    >>> twin.step('{"name": "get_item", "arguments": {"sku": "SKU-1"}}').observation
    '{"error": {"code": "not_found", "message": "no item with sku \\'SKU-1\\'"}}'
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentworld_envs.errors import FieldedError
from agentworld_envs.protocol.endings import FINAL_ANSWER
from agentworld_envs.protocol.tool_calls import ToolCall, parse_action
from agentworld_envs.world.reality import Reality, RealStep
from agentworld_envs.world.scenario import Control, Scenario

__all__ = ["MAX_CALLS", "RETRY_AFTER_S", "STALE_DAYS", "McpTwin", "stale"]

MAX_CALLS = 32
"""Calls one action may hold (as AgentFloor's tools run per turn): each call's work and answer
grow with the records, which writes add to, so without a bound an action's answer could grow
with the square of its length."""
RETRY_AFTER_S = 30
"""The retry-after hint of a ``rate_limit`` answer, in seconds."""
STALE_DAYS = 7
"""How much earlier every date of a ``stale_data`` answer is."""
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{2}:\d{2}")
_NOUNS = {"sku": "item", "event_id": "event", "ticket_id": "ticket", "account_id": "account",
          "deal_id": "deal", "vehicle_id": "vehicle", "service_id": "service"}
_JSON_NAMES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number",
                              list: "array", dict: "object", type(None): "null"}
_WIDER = {"number": {"integer"}}
"""Schema types that also admit another JSON type."""


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


class _Failure(FieldedError):
    """A call that ends in an error result."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.result = _error(code, message, **extra)


def _invalid(name: str, message: str) -> _Failure:
    return _Failure("invalid_arguments", message, field=name)


def _json_type(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def _validate(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise the first problem of the arguments against the tool's JSON schema."""
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            raise _invalid(name, f"missing required argument '{name}'")
    for name, value in arguments.items():
        if name not in properties:
            raise _invalid(name, f"unknown argument '{name}'")
        expected, actual = properties[name].get("type"), _json_type(value)
        known = expected in _JSON_NAMES.values()
        if known and actual != expected and actual not in _WIDER.get(expected, ()):
            raise _invalid(name, f"argument '{name}' must be of type {expected}, "
                                 f"got {_json_type(value)}")


class _Records:
    """The server's records by table, a table being named by its records' first field (id)."""

    def __init__(self, records: Iterable[Mapping[str, Any]]) -> None:
        self.tables: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            self.tables.setdefault(next(iter(record)), []).append(copy.deepcopy(dict(record)))

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The records of a table, in order (created ones last)."""
        return self.tables.setdefault(table, [])

    def get(self, table: str, key: Any) -> dict[str, Any]:
        """The record with this id, or the ``not_found`` failure."""
        found = next((row for row in self.rows(table) if row[table] == key), None)
        if found is None:
            raise _not_found(table, key)
        return found


def _not_found(table: str, key: Any) -> _Failure:
    return _Failure("not_found", f"no {_NOUNS.get(table, table)} with {table} '{key}'")


def _listing(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"items": rows, "count": len(rows)}


def _folded(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


@dataclass(frozen=True)
class _Lookup:
    """A read of one record by its id, given as the argument named like the id field."""

    table: str

    def read(self, records: _Records, arguments: Mapping[str, Any]) -> Any:
        return records.get(self.table, arguments[self.table])

    def empty(self, arguments: Mapping[str, Any]) -> Any:
        raise _not_found(self.table, arguments[self.table])


@dataclass(frozen=True)
class _Listing:
    """A read of the records whose fields equal the arguments of the same name.

    ``contains`` maps arguments matched as a substring of a field; ``parent`` names an id
    argument whose record must exist (a vehicle's service history).
    """

    table: str
    contains: Mapping[str, str] = field(default_factory=dict)
    parent: str | None = None

    def read(self, records: _Records, arguments: Mapping[str, Any]) -> Any:
        if self.parent is not None:
            records.get(self.parent, arguments[self.parent])
        return _listing([row for row in records.rows(self.table)
                         if all(self._matches(row, k, v) for k, v in arguments.items())])

    def empty(self, arguments: Mapping[str, Any]) -> Any:
        return _listing([])

    def _matches(self, row: Mapping[str, Any], argument: str, value: Any) -> bool:
        if argument in self.contains:
            return _folded(value) in _folded(str(row.get(self.contains[argument], "")))
        return _folded(row.get(argument)) == _folded(value)


_Write = Callable[[_Records, Mapping[str, Any]], Any]


def _next_id(ids: Iterable[str], prefix: str) -> str:
    numbers = [int(i[len(prefix) + 1:]) for i in ids if re.fullmatch(rf"{prefix}-\d+", i)]
    return f"{prefix}-{max(numbers, default=0) + 1}"


def _update_stock(records: _Records, arguments: Mapping[str, Any]) -> Any:
    item, delta = records.get("sku", arguments["sku"]), arguments["delta"]
    if item["in_stock"] + delta < 0:
        raise _invalid("delta", f"item '{item['sku']}' has {item['in_stock']} units in stock; "
                                f"cannot remove {-delta}")
    item["in_stock"] += delta
    return item


def _formatted(arguments: Mapping[str, Any], name: str, pattern: re.Pattern[str],
               parse: Callable[[str], Any], shape: str) -> str:
    value = arguments[name]
    try:
        if pattern.fullmatch(value):
            parse(value)
            return value
    except ValueError:
        pass
    raise _invalid(name, f"argument '{name}' must be formatted as {shape}")


def _create_event(records: _Records, arguments: Mapping[str, Any]) -> Any:
    date = _formatted(arguments, "date", _DATE, dt.date.fromisoformat, "YYYY-MM-DD")
    start = _formatted(arguments, "start", _TIME, dt.time.fromisoformat, "HH:MM")
    duration = arguments.get("duration_min", 30)
    if duration <= 0:
        raise _invalid("duration_min", "argument 'duration_min' must be positive")
    events = records.rows("event_id")
    event = {"event_id": _next_id((e["event_id"] for e in events), "EVT"),
             "title": arguments["title"], "date": date, "start": start, "duration_min": duration}
    events.append(event)
    return event


def _add_comment(records: _Records, arguments: Mapping[str, Any]) -> Any:
    ticket = records.get("ticket_id", arguments["ticket_id"])
    ids = (c["comment_id"] for t in records.rows("ticket_id") for c in t.get("comments", []))
    comment = {"comment_id": _next_id(ids, "CMT"), "ticket_id": ticket["ticket_id"],
               "body": arguments["body"]}
    ticket.setdefault("comments", []).append(comment)
    return comment


_FAMILIES: dict[str, dict[str, _Lookup | _Listing | _Write]] = {
    "inventory": {"list_items": _Listing("sku"), "get_item": _Lookup("sku"),
                  "update_stock": _update_stock},
    "calendar": {"list_events": _Listing("event_id"), "get_event": _Lookup("event_id"),
                 "create_event": _create_event},
    "tickets": {"search_tickets": _Listing("ticket_id", contains={"query": "title"}),
                "get_ticket": _Lookup("ticket_id"), "add_comment": _add_comment},
    "crm": {"find_account": _Listing("account_id", contains={"name": "name"}),
            "list_deals": _Listing("deal_id", parent="account_id"),
            "get_deal": _Lookup("deal_id")},
    "fleet": {"list_vehicles": _Listing("vehicle_id"), "get_vehicle": _Lookup("vehicle_id"),
              "get_service_history": _Listing("service_id", parent="vehicle_id")},
}


def stale(value: Any) -> Any:
    """The ``stale_data`` view of a JSON value: whole numbers 10% lower, dates a week earlier.

    >>> stale({"in_stock": 45, "date": "2026-03-05", "ok": True, "ids": ["SKU-1"]})
    {'in_stock': 40, 'date': '2026-02-26', 'ok': True, 'ids': ['SKU-1']}
    """
    if isinstance(value, dict):
        return {k: stale(v) for k, v in value.items()}
    if isinstance(value, list):
        return [stale(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value * 9 // 10
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            return (dt.date.fromisoformat(value) - dt.timedelta(days=STALE_DAYS)).isoformat()
        except ValueError:
            return value
    return value


def _line(result: Any) -> str:
    return json.dumps(result, ensure_ascii=False)


class McpTwin(Reality):
    """The executable twin of one generated MCP server, fresh for one episode."""

    def __init__(self, scenario: Scenario) -> None:
        if scenario.mcp is None:
            raise ValueError(f"mcp scenario {scenario.id} has no generated server to run")
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in scenario.tools}
        family = _FAMILIES[scenario.mcp.family]
        self.tools = {name: family[name] for name in schemas if name in family}
        self.schemas = schemas
        self.records = _Records(scenario.mcp.records)
        """The server's current records."""
        self.snapshot = _Records(stale(r) for r in scenario.mcp.records)
        """What ``stale_data`` reads see."""

    def step(self, action: Any, controls: Sequence[Control] = ()) -> RealStep:
        """Run the action's calls under this turn's fired controls; a final answer ends."""
        parsed = parse_action(action)
        if parsed.errors:
            message = "; ".join(e.message for e in parsed.errors)
            return RealStep(_line(_error("invalid_request", message)))
        if not parsed.calls:
            return RealStep("", terminated=True, ending=FINAL_ANSWER)
        if len(parsed.calls) > MAX_CALLS:
            return RealStep(_line(_error(
                "invalid_request", f"the action holds {len(parsed.calls)} calls; at most "
                                   f"{MAX_CALLS} are allowed")))
        unknown = [*dict.fromkeys(c.name for c in parsed.calls if c.name not in self.tools)]
        if unknown:
            names = ", ".join(f"'{n}'" for n in unknown)
            return RealStep(_line(_error(
                "unknown_tool", f"unknown tool {names}; available tools: {', '.join(self.tools)}")))
        return RealStep("\n".join(_line(self._call(c, controls)) for c in parsed.calls))

    def _call(self, call: ToolCall, controls: Sequence[Control]) -> Any:
        kind = next((c.kind for c in controls if c.kind != "custom"
                     and (c.tools is None or call.name in c.tools)), None)
        if kind == "tool_error":
            return _error("internal_error", f"internal error while running {call.name}; "
                                            "nothing was changed")
        if kind == "rate_limit":
            return _error("rate_limited", f"rate limit exceeded; retry after {RETRY_AFTER_S} "
                                          "seconds", retry_after_s=RETRY_AFTER_S)
        tool, arguments = self.tools[call.name], call.arguments
        try:
            _validate(self.schemas[call.name], arguments)
            if not isinstance(tool, _Lookup | _Listing):
                return tool(self.records, arguments)
            if kind == "empty_results":
                return tool.empty(arguments)
            return tool.read(self.snapshot if kind == "stale_data" else self.records, arguments)
        except _Failure as failure:
            return failure.result
