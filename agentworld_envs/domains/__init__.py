"""The simulated domains, one folder each: its domain class, prompt, scenarios and generators.

Importing this package is cheap: it holds only the table below. A domain's module (its prompt,
action format and scenarios) loads when :func:`get_domain` first asks for it.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentworld_envs.domains.base import Domain
    from agentworld_envs.world.scenario import Scenario

__all__ = ["DOMAINS", "DomainEntry", "generate_scenario", "get_domain"]


@dataclass(frozen=True)
class DomainEntry:
    """Where a domain lives, its env-id title and its default step budget."""

    module: str
    title: str
    max_steps: int


DOMAINS = {
    "mcp": DomainEntry("mcp", "MCP", 20),
    "search": DomainEntry("search", "Search", 20),
    "terminal": DomainEntry("terminal", "Terminal", 30),
    "swe": DomainEntry("swe", "SWE", 30),
    "android": DomainEntry("android", "Android", 25),
    "web": DomainEntry("web", "Web", 20),
    # "desktop", not "os": a module named os.py would shadow the standard library when run.
    "os": DomainEntry("desktop", "OS", 20),
    "floor": DomainEntry("floor", "Floor", 12),
}
"""Domain key -> module, title (``AgentWorld/<title>-v0``) and default step budget."""


@functools.cache
def get_domain(key: str) -> Domain:
    """The domain object for a key such as ``"mcp"``."""
    if key not in DOMAINS:
        raise ValueError(f"unknown domain {key!r}; known domains: {sorted(DOMAINS)}")
    module = importlib.import_module(f"agentworld_envs.domains.{DOMAINS[key].module}.domain")
    return module.DOMAIN


def generate_scenario(key: str, seed: int) -> Scenario:
    """A procedurally generated scenario of a domain (``search`` or ``mcp``), fixed by ``seed``."""
    return get_domain(key).generate(seed)
