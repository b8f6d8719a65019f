"""The examples in docstrings run as written: every module of the four packages that has one."""

from __future__ import annotations

import doctest
import importlib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("agentworld_envs", "floor_tasks", "team_envs", "trainers")


def _modules_with_examples() -> list[str]:
    """Dotted names of the source files holding a ``>>>`` line (found without importing)."""
    return sorted(".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                  for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                  if ">>>" in path.read_text(encoding="utf-8"))


MODULES = _modules_with_examples()


def test_the_modules_are_found() -> None:
    assert {"agentworld_envs.protocol.seeding", "floor_tasks.env",
            "agentworld_envs.wrappers.sb3_stack"} <= set(MODULES)


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scripted backend's placeholder warning
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
