"""SWE: a software repository behind a shell, file tools and a todo list, simulated.

The default tools (``bash``, ``read_file``, ``write_file``, ``str_replace``, ``todo_write``) are
package data; a scenario's ``world`` describes the virtual repository.
"""

from __future__ import annotations

from agentworld_envs.domains.base import ToolDomain

__all__ = ["DOMAIN", "SweDomain"]


class SweDomain(ToolDomain):
    """Tool calls on a virtual repository; a final answer (the agent's report) ends it."""

    key = "swe"


DOMAIN = SweDomain()
