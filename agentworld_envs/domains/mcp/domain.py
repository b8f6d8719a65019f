"""MCP: tool servers that speak the Model Context Protocol, simulated call by call.

The scenario lists the server's tools; the world model answers each call with the raw tool
result (or a realistic error). The procedural generator builds fictional tool servers with
injected perturbations (:mod:`agentworld_envs.domains.mcp.servers`); each generated
server also runs for real as its executable twin
(:mod:`agentworld_envs.domains.mcp.twin`), which gives fidelity, hybrid mode and
``info["real_observation"]``. The hand-written servers have no twin.
"""

from __future__ import annotations

from agentworld_envs.domains.base import ToolDomain
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import McpTwin
from agentworld_envs.world.scenario import Scenario

__all__ = ["DOMAIN", "McpDomain"]


class McpDomain(ToolDomain):
    """Calls to MCP tool servers; a final answer ends the episode."""

    key = "mcp"

    def generate(self, seed: int) -> Scenario:
        """A fictional tool server with a task, a reference answer and perturbations."""
        return mcp_server_scenario(seed)

    def start_reality(self, scenario: Scenario, budget: int) -> McpTwin | None:
        """The executable twin of a generated server; None for a hand-written one."""
        return McpTwin(scenario) if scenario.mcp is not None else None


DOMAIN = McpDomain()
