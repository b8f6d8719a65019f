"""The examples in docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agentworld_envs.protocol.text_space",
    "agentworld_envs.protocol.tools",
    "agentworld_envs.backends.batching",
    "agentworld_envs.backends.faults",
    "agentworld_envs.bench.release_instructions",
    "agentworld_envs.serve.cli",
    "agentworld_envs.serve.served_env",
    "agentworld_envs.distributed.fault_guard",
    "agentworld_envs.distributed.group_episodes",
    "agentworld_envs.distributed.layout",
    "agentworld_envs.distributed.slots",
    "agentworld_envs.distributed.vector_parts",
    "agentworld_envs.sim.vector",
    "agentworld_envs.sim.vector_info",
    "floor_tasks.env",
    "floor_tasks.solutions",
    "floor_tasks.harness.runner",
    "team_envs.text.reasoning",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
