"""Search: a web search engine, a page extractor and a key-value memory, simulated.

The default tools are ``web_search``, ``web_extractor`` and ``dict_memory`` (package data). The
procedural generator builds fictional worlds whose facts the simulated results must carry, each
with its reference answer (:mod:`agentworld_envs.domains.search.worlds`).
"""

from __future__ import annotations

from typing import Any

from agentworld_envs.domains.base import ToolDomain
from agentworld_envs.domains.search.worlds import search_world_scenario
from agentworld_envs.world.scenario import Scenario

__all__ = ["DOMAIN", "SearchDomain"]


class SearchDomain(ToolDomain):
    """Searches, page extractions and memory operations; a final answer ends the episode."""

    key = "search"

    def simulation_notes(self, scenario: Scenario, fictional: bool) -> dict[str, Any]:
        """The release's Simulation Instruction: the target query and its reference answer."""
        return {"target_query": scenario.instruction,
                "reference_answer": scenario.reference_answer,
                "world": scenario.world, "fictional": fictional}

    def generate(self, seed: int) -> Scenario:
        """A fictional world with a question and its reference answer."""
        return search_world_scenario(seed)


DOMAIN = SearchDomain()
