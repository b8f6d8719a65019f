"""The record controls of the sim-to-real experiment on generated MCP servers: rule-based
simulators that are readable, the first true and the others wrong.

Each is a :class:`McpRecordSimulator`, a backend that answers a world-model request of
``AgentWorld/MCP-v0`` as the server's executable twin (:class:`McpTwin`) would: it finds the
server by the World Notes of the request's first user turn, replays the episode's actions (the
``**Action:**`` of every user turn, under the controls that fired on it) on a fresh twin of
the server, and returns the last call's result, in the twin's own format, as the predicted
observation. The twin runs on a copy of the server's records in which the asked field (the one
the family's answers are made of, :data:`ASKED_FIELDS`) is

``sim-fixture``   as the server has it (the twin's answers, exactly);
``sim-constant``  one value for every record: that of the first record whose value is not the
                  answer, so that no record shows the answer (readable, wrong);
``sim-shuffled``  the records' own values permuted so that no record shows its own (readable,
                  wrong: the answer is shown, on another record);

every other field true. Nothing is random but the permutation, drawn from a generator seeded
by ``seed`` and the server's id.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.domains.mcp.twin import McpTwin
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.world.controls import control_text
from agentworld_envs.world.parsing import tagged_observation
from agentworld_envs.world.prompting import simulation_instruction
from agentworld_envs.world.scenario import Control, Scenario

__all__ = ["ASKED_FIELDS", "MCP_CONTROLS", "McpRecordSimulator", "shown_records",
           "shown_scenario"]

MCP_CONTROLS = ("sim-fixture", "sim-constant", "sim-shuffled")
ASKED_FIELDS = {"inventory": "in_stock", "calendar": "start", "tickets": "assignee",
                "crm": "value_eur", "fleet": "next_service"}
"""The record field each family's answers (right and wrong) are made of."""
_ACTION = "**Action:**"
_CONTROL = simulation_instruction(controls=[""])
"""How a fired control's line in a user turn begins (its text follows)."""
_TRIES = 1000


def shown_records(scenario: Scenario, control: str, seed: int = 0) -> list[dict[str, Any]]:
    """The server's records as ``control`` shows them: the asked field true, one value for
    every record (the first record's that is not the answer), or its values permuted so that
    no record shows its own (the permutation drawn from ``seed`` and the server's id); every
    other field true.

    Raises:
        ValueError: for an unknown control, when every record holds the answer, or when no
            permutation moves every value (one value held by more than half of the records).
    """
    if control not in MCP_CONTROLS:
        raise ValueError(f"unknown MCP record control {control!r}; choose from {MCP_CONTROLS}")
    field = ASKED_FIELDS[scenario.mcp.family]
    records = [dict(record) for record in scenario.mcp.records]
    holders = [record for record in records if field in record]
    values = [record[field] for record in holders]
    if control == "sim-constant":
        wrong = next((v for v in values if str(v) != scenario.reference_answer), None)
        if wrong is None:
            raise ValueError(f"every record of {scenario.id} holds the answer")
        shown = [wrong] * len(values)
    elif control == "sim-shuffled":
        rng = np.random.default_rng([seed, zlib.crc32(scenario.id.encode())])
        for _ in range(_TRIES):
            order = rng.permutation(len(values))
            if all(values[j] != value for j, value in zip(order, values, strict=True)):
                break
        else:
            raise ValueError(f"no permutation of {scenario.id}'s {field} values moves them all")
        shown = [values[j] for j in order]
    else:
        shown = values
    for record, value in zip(holders, shown, strict=True):
        record[field] = value
    return records


def shown_scenario(scenario: Scenario, control: str, seed: int = 0) -> Scenario:
    """The scenario with its server's records as ``control`` shows them (nothing else
    changed: its world notes, question and reference answer stay the true ones)."""
    return scenario.model_copy(update={"mcp": scenario.mcp.model_copy(
        update={"records": shown_records(scenario, control, seed)})})


def _turn(text: str, controls: Sequence[Control]) -> tuple[str, list[Control]]:
    """A user turn's action and the controls that fired on it (matched by their text, in the
    order they fire, each applying to a tool the action calls)."""
    if _ACTION not in text:
        raise BackendError("a user turn without an action")
    action = text.rsplit(_ACTION, 1)[1]
    lines = re.findall(rf"^{re.escape(_CONTROL)}(.*)$", text, re.MULTILINE)
    tools = {call.name for call in parse_action(action).calls}
    fired = []
    for control in controls:
        if (lines and control_text(control) == lines[0]
                and (control.tools is None or tools & set(control.tools))):
            fired.append(control)
            lines.pop(0)
    if lines:
        raise BackendError(f"a control this server does not have: {lines[0]!r}")
    return action, fired


class McpRecordSimulator(Backend):
    """A rule-based simulator of generated MCP servers: each request is answered by the
    server's twin on its records as ``control`` shows them (see the module's docstring).

    Args:
        scenarios: The servers it simulates (a request names one by its World Notes).
        control: ``sim-fixture``, ``sim-constant`` or ``sim-shuffled``.
        seed: Seeds ``sim-shuffled``'s permutations (with each server's id).
    """

    name = "mcp-records"
    blocking = False

    def __init__(self, scenarios: Sequence[Scenario], control: str, seed: int = 0) -> None:
        self.control, self.seed = control, seed
        self.servers = {s.world.strip(): shown_scenario(s, control, seed) for s in scenarios}
        """The shown servers by their World Notes."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.control, "seed": self.seed,
                "servers": sorted(s.id for s in self.servers.values())}

    def observation(self, request: ChatRequest) -> str:
        """The twin's result for the request's last action, after the episode's earlier ones.

        Raises:
            BackendError: when the request names no server this simulator has, or a control
                that server does not have.
        """
        turns = [m["content"] for m in request.messages if m.get("role") == "user"]
        server = next((s for notes, s in self.servers.items() if turns and notes in turns[0]),
                      None)
        if server is None:
            raise BackendError("the request's World Notes name no server this simulator has")
        twin, observation = McpTwin(server), ""
        for text in turns:
            observation = twin.step(*_turn(text, server.controls)).observation
        return observation

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion(text=tagged_observation(self.observation(r))) for r in requests]
