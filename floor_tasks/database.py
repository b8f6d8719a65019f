"""A task's fixture database: records, search index, option sets, constraints, scripted failures.

Fixtures are package data under ``floor_tasks/fixtures/``. They are read-only, so one parsed
fixture is shared by every env; tools hand out copies, so a run can never change the next.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import yaml

__all__ = ["FixtureDB", "compare", "load_fixture", "register_fixture"]

_OPERATORS = {
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "neq": lambda a, b: a != b,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
}


def compare(actual: Any, operator: str, expected: Any) -> bool:
    """Apply a comparison operator; a missing or incomparable value never satisfies it."""
    if actual is None:
        return False
    try:
        return bool(_OPERATORS[operator](actual, expected))
    except TypeError:
        return False


_REGISTERED: dict[str, FixtureDB] = {}
"""Fixtures made at run time (:mod:`floor_tasks.generated`), by name."""


def register_fixture(name: str, data: dict[str, Any]) -> None:
    """Make ``load_fixture(name)`` serve ``data`` (a derived task's records); a name a packaged
    fixture has is refused."""
    if (resources.files("floor_tasks") / "fixtures" / f"{name}.yaml").is_file():
        raise ValueError(f"{name} is a packaged fixture; a generated one needs its own name")
    _REGISTERED[name] = FixtureDB(data)


def load_fixture(name: str | None) -> FixtureDB:
    """The fixture named ``name`` (``None`` gives an empty database).

    Fixtures are read-only: tools return copies of what they read, so one parsed fixture
    serves every env.
    """
    if name and name not in _REGISTERED and "_g" in name:  # a generated task's, maybe
        from floor_tasks.generated import regenerate_fixture

        regenerate_fixture(name)
    return _REGISTERED[name] if name in _REGISTERED else _packaged_fixture(name)


@functools.cache
def _packaged_fixture(name: str | None) -> FixtureDB:
    if not name:
        return FixtureDB({})
    path = resources.files("floor_tasks") / "fixtures" / f"{name}.yaml"
    return FixtureDB(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


class FixtureDB:
    """Read access to one fixture's data."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.records: dict[str, dict[str, Any]] = data.get("records", {})
        self.search_index: dict[str, list[str]] = data.get("search_index", {})
        self.options: dict[str, list[dict[str, Any]]] = data.get("options", {})
        self.constraints: dict[str, dict[str, Any]] = data.get("constraints", {})
        self.scripted_failures: list[dict[str, Any]] = data.get("scripted_failures", [])

    def scripted_response(self, tool_name: str, arguments: dict[str, Any]) -> dict | None:
        """The scripted response for this call, if the fixture scripts one."""
        for failure in self.scripted_failures:
            if failure["tool"] == tool_name and all(
                    arguments.get(k) == v for k, v in failure["when_args"].items()):
                return json.loads(json.dumps(failure["response"]))
        return None

    def search(self, query: str) -> list[str]:
        """Record ids indexed under ``query`` (exact key, as in the reference)."""
        return list(self.search_index.get(query, []))

    def evaluate_constraint(self, record_id: str, name: str) -> dict[str, Any]:
        """Check a field constraint against a record (both must exist)."""
        spec = self.constraints[name]
        actual = self.records[record_id].get(spec["field"])
        satisfied = compare(actual, spec["operator"], spec["value"])
        return {
            "record_id": record_id,
            "constraint_name": name,
            "satisfied": satisfied,
            "violations": [] if satisfied else [
                f"{spec['field']}={actual!r} fails {spec['operator']} {spec['value']!r}"],
            "actual_value": actual,
            "expected_value": spec["value"],
            "operator": spec["operator"],
        }
