"""The generated MCP servers' candidate answers leak nothing to a policy that compares them.

Each strategy below is blind to observations: it picks an answer from the candidates alone
(the largest, the median, the one with a sibling at the family's commonest offset, the odd one
out, the one whose value recurs least across servers, the one sharing most with the prompt
and calls...). Ties split the credit, so a strategy's score is its expected success. On 200
servers of each family, drawn from the explicit seeds 0, 1, 2, ... in order, every strategy
must be right at most at chance, 1/3: the lower end of the Wilson interval of its success rate
over the 200 servers stays at or below 1/3. The interval is 95% for the 50 tests together
(Bonferroni: 99.9% each, z = 3.29); at n = 200 a chance strategy's interval is about
0.25-0.43. The old generator's "+25 sibling" (inventory) and constant 09:00/10:00 (calendar)
are caught by these strategies (tested on candidates rebuilt that way).
"""

from __future__ import annotations

import datetime
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from agentworld_envs.domains.mcp.servers import FAMILIES, mcp_server_scenario
from agentworld_envs.world.scenario import Scenario

SERVERS = 200
Z = 3.29
"""Two-sided 99.9%: 95% over the 10 strategies x 5 families together (Bonferroni)."""
PREFIX = "The answer is "


def _servers(family: str) -> list[Scenario]:
    found = (s for s in map(mcp_server_scenario, itertools.count()) if s.mcp.family == family)
    return list(itertools.islice(found, SERVERS))


def _value(answer: str) -> str:
    return answer.removeprefix(PREFIX).removesuffix(".")


def _number(value: str) -> float:
    """A comparable number for a count, a time or a date (names: their length)."""
    if re.fullmatch(r"\d+", value):
        return float(value)
    if re.fullmatch(r"\d\d:\d\d", value):
        hours, minutes = value.split(":")
        return 60.0 * int(hours) + int(minutes)
    if re.fullmatch(r"\d{4}-\d\d-\d\d", value):
        return float(datetime.date.fromisoformat(value).toordinal())
    return float(len(value))


class Item:
    """One server as a blind policy sees it: its prompt, calls and answers."""

    def __init__(self, scenario: Scenario) -> None:
        self.answers = [_value(c) for c in scenario.candidate_actions if c.startswith(PREFIX)]
        self.right = _value(scenario.candidate_actions[scenario.solution[-1]])
        self.context = " ".join([scenario.instruction, *(
            c for c in scenario.candidate_actions if not c.startswith(PREFIX))])
        self.numbers = np.array([_number(a) for a in self.answers])


Strategy = Callable[[Item, list[Item]], np.ndarray]
"""Scores of an item's answers (the highest are picked), given every item of the family."""


def _commonest_offset(items: list[Item]) -> float:
    offsets = Counter(b - a for item in items for a, b in itertools.permutations(item.numbers, 2))
    return offsets.most_common(1)[0][0]


def _sibling(item: Item, items: list[Item]) -> np.ndarray:
    offset = _commonest_offset(items)
    return np.array([float(np.any(np.isclose(item.numbers, n + offset))) for n in item.numbers])


def _odd_one_out(item: Item, items: list[Item]) -> np.ndarray:
    return np.array([min(abs(n - m) for j, m in enumerate(item.numbers) if j != i)
                     for i, n in enumerate(item.numbers)])


def _rarest(item: Item, items: list[Item]) -> np.ndarray:
    seen = Counter(a for other in items for a in other.answers)
    return -np.array([float(seen[a]) for a in item.answers])


def _overlap(item: Item, items: list[Item]) -> np.ndarray:
    words = set(re.findall(r"\w+", item.context.lower()))
    return np.array([float(len(set(re.findall(r"\w+", a.lower())) & words))
                     for a in item.answers])


def _median(item: Item, items: list[Item]) -> np.ndarray:
    return -np.abs(item.numbers - np.median(item.numbers))


STRATEGIES: dict[str, Strategy] = {
    "largest": lambda item, items: item.numbers,
    "smallest": lambda item, items: -item.numbers,
    "median": _median,
    "has a sibling at the commonest offset": _sibling,
    "is a sibling at the commonest offset": lambda item, items: np.array([
        float(np.any(np.isclose(item.numbers + _commonest_offset(items), n)))
        for n in item.numbers]),
    "odd one out": _odd_one_out,
    "closest to the others": lambda item, items: -_odd_one_out(item, items),
    "rarest across servers": _rarest,
    "shares most with the prompt and calls": _overlap,
    "first in the list": lambda item, items: -np.arange(len(item.answers), dtype=float),
}


def _credit(strategy: Strategy, items: list[Item]) -> float:
    """Expected successes: each item gives 1/k when the right answer is among k tied picks."""
    total = 0.0
    for item in items:
        scores = strategy(item, items)
        picked = [a for a, s in zip(item.answers, scores, strict=True) if s == scores.max()]
        total += (item.right in picked) / len(picked)
    return total


def wilson(successes: float, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a success rate."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.fixture(scope="module", params=FAMILIES)
def family_items(request) -> tuple[str, list[Item]]:
    return request.param, [Item(s) for s in _servers(request.param)]


def test_three_distinct_answers_one_right(family_items) -> None:
    _, items = family_items
    assert all(len(set(i.answers)) == len(i.answers) == 3 and i.right in i.answers
               for i in items)


@pytest.mark.parametrize("name", STRATEGIES)
def test_no_candidate_comparison_beats_chance(family_items, name: str) -> None:
    family, items = family_items
    successes = _credit(STRATEGIES[name], items)
    low, high = wilson(successes, len(items))
    assert low <= 1 / 3, (f"{family}: {name!r} is right on {successes:.1f} of {len(items)} "
                          f"servers, Wilson interval {low:.2f}-{high:.2f}, above chance 1/3")


def _rebuilt(items: list[Item], distractor: Callable[[Item], str]) -> list[Item]:
    """The items with their third answer replaced as the old generator drew it."""
    for item in items:
        wrong = [a for a in item.answers if a != item.right]
        item.answers = [item.right, wrong[0], distractor(item)]
        item.numbers = np.array([_number(a) for a in item.answers])
    return items


def test_the_strategies_catch_the_old_leaks() -> None:
    inventory = _rebuilt([Item(s) for s in _servers("inventory")],
                         lambda item: str(int(item.right) + 25))
    assert _credit(STRATEGIES["has a sibling at the commonest offset"], inventory) > 0.95 * SERVERS
    calendar = _rebuilt([Item(s) for s in _servers("calendar")],
                        lambda item: "09:00" if item.right != "09:00" else "10:00")
    assert wilson(_credit(STRATEGIES["rarest across servers"], calendar), SERVERS)[0] > 1 / 3
