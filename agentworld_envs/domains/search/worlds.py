"""Fictional worlds for the search domain: invented facts, a question and its reference answer.

Each seed gives one world from one of five templates (a town's bridge, a company, a scientific
discovery, a sports club, a novel and its sequel). The facts, including near-namesake
distractors, go to the world model as ground truth; the question goes to the agent; the
reference answer is scored by the rule verifier. Some questions need two hops.

The wrong candidate answers are drawn like the right one (distinct values from the same range,
names made the same way), so a policy that compares the candidates without searching is right
at chance; the answer check fails an answer that also states one of them.

Example:
    >>> a, b = search_world_scenario(7), search_world_scenario(7)
    >>> a == b, a.fictional, a.reference_answer is not None
    (True, True, True)
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentworld_envs.domains.names import (
    distinct,
    distinct_draws,
    fictional_person,
    fictional_word,
    pick,
    shuffled,
)
from agentworld_envs.protocol.integers import check_int
from agentworld_envs.world.rewards import answer_matches
from agentworld_envs.world.scenario import Check, RewardSpec, Scenario

__all__ = ["search_world_scenario"]


@dataclass(frozen=True)
class _World:
    facts: list[str]
    question: str
    answer: str
    match: str
    queries: list[str]
    wrong_answers: list[str]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _people(rng: np.random.Generator, count: int) -> list[str]:
    return distinct_draws(rng, fictional_person, count)


def _town(rng: np.random.Generator) -> _World:
    town, other = fictional_word(rng, 3), fictional_word(rng, 3)
    bridge, river = f"{fictional_word(rng)} Bridge", f"River {fictional_word(rng)}"
    year, other_year, third_year = distinct(rng, range(1820, 2015), 3)
    engineer, rival, third_person = _people(rng, 3)
    population, *other_populations = distinct(rng, range(2_000, 400_000), 3)
    facts = [f"{town} is a town on the {river}; population {population:,}.",
             f"The {bridge} in {town} was completed in {year} to a design by the engineer "
             f"{engineer}.",
             f"The neighbouring town of {other} has a crossing built in {other_year} by {rival}."]
    question, answer, match, wrong = pick(rng, [
        (f"Which engineer designed the {bridge} in {town}?", engineer, "contains",
         [rival, third_person]),
        (f"In which year was the {bridge} in {town} completed?", str(year), "number",
         [str(other_year), str(third_year)]),
        (f"What is the population of the town where the {bridge} stands?", str(population),
         "number", [str(p) for p in other_populations]),
    ])
    return _World(facts, question, answer, match, [f"{bridge} {town}", f"{town} {river}"], wrong)


def _company(rng: np.random.Generator) -> _World:
    name = f"{fictional_word(rng)} {pick(rng, ['Systems', 'Foods', 'Robotics', 'Textiles'])}"
    city, *other_cities = distinct_draws(rng, lambda r: fictional_word(r, 3), 3)
    founder, ceo, third_person = _people(rng, 3)
    year = int(rng.integers(1900, 2015))
    staff, *other_staff = distinct(rng, range(12, 90_000), 3)
    product = f"the {fictional_word(rng)} {pick(rng, ['X1', 'Pro', 'Mini', 'One'])}"
    facts = [f"{name} was founded in {city} in {year} by {founder}, and is headquartered there.",
             f"Its chief executive is {ceo}; it employs {staff:,} people.",
             f"Its best-known product is {product}."]
    question, answer, match, wrong = pick(rng, [
        (f"Who founded the company that makes {product}?", founder, "contains",
         [ceo, third_person]),
        (f"In which city is {name} headquartered?", city, "contains", other_cities),
        (f"How many people does {name} employ?", str(staff), "number",
         [str(s) for s in other_staff]),
    ])
    return _World(facts, question, answer, match, [name, f"{product} maker"], wrong)


def _discovery(rng: np.random.Generator) -> _World:
    effect = f"{fictional_word(rng)} effect"
    scientist, colleague = _people(rng, 2)
    institute, later, third_institute = distinct_draws(
        rng, lambda r: f"{fictional_word(r, 3)} Institute", 3)
    year, *other_years = distinct(rng, range(1880, 2015), 3)
    facts = [f"The {effect} was first described in {year} by {scientist}.",
             f"{scientist} worked at the {institute} at the time, with {colleague}.",
             f"{colleague} later moved to the {later}."]
    question, answer, match, wrong = pick(rng, [
        (f"At which institute did the scientist who described the {effect} work at the time?",
         institute, "contains", [later, third_institute]),
        (f"In which year was the {effect} first described?", str(year), "number",
         [str(y) for y in other_years]),
    ])
    return _World(facts, question, answer, match, [effect, f"{scientist} {effect}"], wrong)


def _club(rng: np.random.Generator) -> _World:
    club = f"{fictional_word(rng, 3)} {pick(rng, ['Rovers', 'Comets', 'Harriers', 'Falcons'])}"
    cup, year = f"{fictional_word(rng)} Cup", int(rng.integers(1950, 2024))
    stadium = f"{fictional_word(rng)} Park"
    seats, *other_seats = distinct(rng, range(800, 60_000), 3)
    coach, *other_coaches = _people(rng, 3)
    facts = [f"The {club} won the {cup} in {year} under the coach {coach}.",
             f"The {club} play at {stadium}, which seats {seats:,}."]
    question, answer, match, wrong = pick(rng, [
        (f"How many seats does the stadium of the club that won the {cup} in {year} have?",
         str(seats), "number", [str(s) for s in other_seats]),
        (f"Who coached the {club} when they won the {cup}?", coach, "contains", other_coaches),
    ])
    return _World(facts, question, answer, match, [f"{cup} {year} winner", club], wrong)


def _novel(rng: np.random.Generator) -> _World:
    title, sequel = (f"The {fictional_word(rng)} {pick(rng, ['Tide', 'Ledger', 'Orchard'])}",
                     f"Return to {fictional_word(rng, 3)}")
    author, *other_authors = _people(rng, 3)
    publisher, other_publisher, third_publisher = distinct_draws(
        rng, lambda r: f"{fictional_word(r)} {pick(r, ['Press', 'Books', 'House'])}", 3)
    year = int(rng.integers(1900, 2015))
    facts = [f"{title} is a novel by {author}, first published in {year} by {publisher}.",
             f"Its sequel, {sequel}, appeared {int(rng.integers(2, 9))} years later from "
             f"{other_publisher}."]
    question, answer, match, wrong = pick(rng, [
        (f"Which publisher brought out the sequel to {title}?", other_publisher, "contains",
         [publisher, third_publisher]),
        (f"Who wrote {title}?", author, "contains", other_authors),
    ])
    return _World(facts, question, answer, match, [title, f"{title} sequel"], wrong)


_TEMPLATES: tuple[Callable[[np.random.Generator], _World], ...] = (
    _town, _company, _discovery, _club, _novel)


def _call(name: str, arguments: dict[str, object]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def search_world_scenario(seed: int) -> Scenario:
    """The fictional search world of one seed (drawn again, from ``[seed, n]``, while its
    question would state its own answer).

    Raises:
        ValueError: a seed that is not a non-negative integer (a bool would give seed 1's world
            under another id).
    """
    seed = check_int("seed", seed, 0)
    for attempt in itertools.count():
        rng = np.random.default_rng([seed, attempt] if attempt else seed)
        world = pick(rng, _TEMPLATES)(rng)
        if not answer_matches(world.question, world.answer, world.match):
            break
    calls = [*(_call("web_search", {"queries": [query]}) for query in world.queries),
             _call("web_extractor", {"url": f"https://www.{_slug(world.queries[0])}.example/"})]
    answers = [*dict.fromkeys(f"The answer is {a}." for a in (world.answer, *world.wrong_answers))]
    candidates, solution = shuffled(rng, [*calls, *answers], [0, len(calls)])
    return Scenario(
        id=f"search-gen-{seed}", domain="search",
        instruction=f"{world.question} Search the web, then answer in one sentence.",
        world="\n".join(f"- {fact}" for fact in world.facts),
        reference_answer=world.answer,
        reward=RewardSpec(checks=[Check(check="answer_matches", match=world.match,
                                        excludes=world.wrong_answers),
                                  Check(check="answer_observed", match=world.match)]),
        candidate_actions=candidates, solution=solution, fictional=True)
