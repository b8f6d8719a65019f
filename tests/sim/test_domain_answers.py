"""Review of the scenarios' answers: no candidate comparison, hedge or question gives them away."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict

import numpy as np
import pytest

from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.search.worlds import search_world_scenario
from agentworld_envs.world.rewards import EpisodeLog, answer_matches, run_checks
from agentworld_envs.world.scenario import Scenario
from tests.sim.test_mcp_candidate_leaks import STRATEGIES, Item, _credit, wilson

WORLDS = 150
"""Generated search worlds per question kind that the blind strategies are scored on."""


def _kind(scenario: Scenario) -> str:
    """The question's template: its words without the invented names and the numbers."""
    return re.sub(r"[A-Z]\w*|\d+", "", scenario.instruction)


def _last_word_of_right_answers(item: Item, items: list[Item]) -> np.ndarray:
    """Prefer the ending that other worlds' right answers have and their wrong ones lack
    (the old generator's sequel publisher always ended in "Books")."""
    right = Counter(other.right.split()[-1] for other in items if other is not item)
    wrong = Counter(a.split()[-1] for other in items if other is not item
                    for a in other.answers if a != other.right)
    return np.array([float(right[a.split()[-1]] - wrong[a.split()[-1]]) for a in item.answers])


@pytest.fixture(scope="module")
def search_kinds() -> dict[str, list[Item]]:
    kinds: dict[str, list[Item]] = defaultdict(list)
    for seed in itertools.count():
        scenario = search_world_scenario(seed)
        kinds[_kind(scenario)].append(Item(scenario))
        if len(kinds) >= 12 and min(map(len, kinds.values())) >= WORLDS:
            return {kind: items[:WORLDS] for kind, items in kinds.items()}


def test_generated_search_candidates_are_three_distinct_answers_one_right(search_kinds) -> None:
    assert len(search_kinds) == 12
    for items in search_kinds.values():
        assert all(len(set(i.answers)) == len(i.answers) == 3 and i.right in i.answers
                   for i in items)


@pytest.mark.parametrize("name", [*STRATEGIES, "last word of right answers"])
def test_no_blind_comparison_of_search_candidates_beats_chance(search_kinds, name: str) -> None:
    """As for the MCP servers: before, the median of the three numbers was right on every
    seats, population and staff question (seats, seats + 1500, seats // 2)."""
    strategy = STRATEGIES.get(name, _last_word_of_right_answers)
    for kind, items in search_kinds.items():
        successes = _credit(strategy, items)
        low, high = wilson(successes, len(items))
        assert low <= 1 / 3, (f"{kind!r}: {name!r} is right on {successes:.1f} of {len(items)} "
                              f"worlds, Wilson interval {low:.2f}-{high:.2f}")


def _answer_passes(scenario: Scenario, answer: str) -> bool:
    checks = [c for c in scenario.reward.checks if c.check == "answer_matches"]
    return all(run_checks(checks, EpisodeLog(scenario, answer=answer)).values())


def _final_answers(key: str, scenario: Scenario) -> tuple[str, list[str]]:
    """The solution's final answer and the wrong final answers among the candidates."""
    domain = get_domain(key)
    read = [domain.interpret(c, scenario, scenario.initial_state)
            for c in scenario.candidate_actions]
    right = read[scenario.solution[-1]].answer
    wrong = [r.answer for i, r in enumerate(read)
             if r.kind == "finish" and r.answer and i != scenario.solution[-1]]
    return right or "", wrong


def _answered(key: str) -> list[Scenario]:
    return [s for s in get_domain(key).builtin.values()
            if any(c.check == "answer_matches" for c in s.reward.checks)]


@pytest.mark.parametrize("key", [k for k in DOMAINS if k != "floor" and _answered(k)])
def test_builtin_answer_checks_fail_a_hedge_over_the_candidate_answers(key: str) -> None:
    """"The server listens on port 8443. or ... 8080." scored 1 on 30 built-in scenarios."""
    for scenario in _answered(key):
        right, wrong = _final_answers(key, scenario)
        assert wrong and _answer_passes(scenario, right), scenario.id
        assert not _answer_passes(scenario, " or ".join([right, *wrong])), scenario.id


def test_generated_search_answer_check_fails_a_hedge_over_the_candidates() -> None:
    for seed in range(200):
        scenario = search_world_scenario(seed)
        right, wrong = _final_answers("search", scenario)
        assert _answer_passes(scenario, right)
        assert not _answer_passes(scenario, " or ".join([right, *wrong])), seed


def test_the_weather_answer_is_not_in_its_instruction_and_states_the_chance() -> None:
    """"Answer yes or no" held the reference answer "yes": echoing it scored."""
    scenario = get_domain("mcp").builtin["mcp-weather-rain-ratelimited"]
    assert not _answer_passes(scenario, scenario.instruction)
    assert not _answer_passes(scenario, "Yes.")
    assert _answer_passes(scenario, "Yes: an 80% chance of rain.")


@pytest.mark.parametrize(("generate", "seed"), [(mcp_server_scenario, 10232),
                                                (search_world_scenario, 2872)])
def test_no_generated_question_states_its_own_answer(generate, seed: int) -> None:
    """Seed 10232's calendar event started at 11:15 on 2026-11-15 (the date reads as the time);
    seed 2872's stadium seated 2,008 and its club won the cup in 2008."""
    for scenario in map(generate, [seed, *range(300)]):
        check = scenario.reward.checks[0]
        assert not answer_matches(scenario.instruction, scenario.reference_answer, check.match)
    assert generate(seed) == generate(seed)
