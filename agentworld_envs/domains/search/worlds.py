"""Fictional worlds for the search domain: invented facts, a question and its reference answer.

Each seed gives one world from one of five templates (a town's bridge, a company, a scientific
discovery, a sports club, a novel and its sequel). The facts, including near-namesake
distractors, go to the world model as ground truth; the question goes to the agent; the
reference answer is scored by the rule verifier. Some questions need two hops.

Example:
    >>> a, b = search_world_scenario(7), search_world_scenario(7)
    >>> a == b, a.fictional, a.reference_answer is not None
    (True, True, True)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agentworld_envs.domains.names import (
    fictional_person,
    fictional_word,
    pick,
    shuffled,
)
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


def _year(rng: np.random.Generator, low: int = 1820, high: int = 2015) -> int:
    return int(rng.integers(low, high))


def _town(rng: np.random.Generator) -> _World:
    town, other = fictional_word(rng, 3), fictional_word(rng, 3)
    bridge, river = f"{fictional_word(rng)} Bridge", f"River {fictional_word(rng)}"
    year, other_year = _year(rng), _year(rng)
    engineer, rival = fictional_person(rng), fictional_person(rng)
    population = int(rng.integers(2_000, 400_000))
    facts = [f"{town} is a town on the {river}; population {population:,}.",
             f"The {bridge} in {town} was completed in {year} to a design by the engineer "
             f"{engineer}.",
             f"The neighbouring town of {other} has a crossing built in {other_year} by {rival}."]
    question, answer, match, wrong = pick(rng, [
        (f"Which engineer designed the {bridge} in {town}?", engineer, "contains",
         [rival, fictional_person(rng)]),
        (f"In which year was the {bridge} in {town} completed?", str(year), "number",
         [str(other_year), str(year + 7)]),
        (f"What is the population of the town where the {bridge} stands?", str(population),
         "number", [str(population // 2 + 13), str(population * 3)]),
    ])
    return _World(facts, question, answer, match, [f"{bridge} {town}", f"{town} {river}"], wrong)


def _company(rng: np.random.Generator) -> _World:
    name = f"{fictional_word(rng)} {pick(rng, ['Systems', 'Foods', 'Robotics', 'Textiles'])}"
    city, founder, ceo = fictional_word(rng, 3), fictional_person(rng), fictional_person(rng)
    year, staff = _year(rng, 1900), int(rng.integers(12, 90_000))
    product = f"the {fictional_word(rng)} {pick(rng, ['X1', 'Pro', 'Mini', 'One'])}"
    facts = [f"{name} was founded in {city} in {year} by {founder}.",
             f"Its chief executive is {ceo}; it employs {staff:,} people.",
             f"Its best-known product is {product}."]
    question, answer, match, wrong = pick(rng, [
        (f"Who founded the company that makes {product}?", founder, "contains",
         [ceo, fictional_person(rng)]),
        (f"In which city is {name} headquartered?", city, "contains",
         [fictional_word(rng, 3), fictional_word(rng, 3)]),
        (f"How many people does {name} employ?", str(staff), "number",
         [str(staff + 400), str(max(1, staff // 3))]),
    ])
    return _World(facts, question, answer, match, [name, f"{product} maker"], wrong)


def _discovery(rng: np.random.Generator) -> _World:
    effect = f"{fictional_word(rng)} effect"
    scientist, colleague = fictional_person(rng), fictional_person(rng)
    institute = f"{fictional_word(rng, 3)} Institute"
    year = _year(rng, 1880)
    facts = [f"The {effect} was first described in {year} by {scientist}.",
             f"{scientist} worked at the {institute} at the time, with {colleague}.",
             f"{colleague} later moved to the {fictional_word(rng, 3)} Institute."]
    question, answer, match, wrong = pick(rng, [
        (f"At which institute did the scientist who described the {effect} work at the time?",
         institute, "contains", [f"{fictional_word(rng, 3)} Institute", "Royal Institute"]),
        (f"In which year was the {effect} first described?", str(year), "number",
         [str(year + 11), str(year - 5)]),
    ])
    return _World(facts, question, answer, match, [effect, f"{scientist} {effect}"], wrong)


def _club(rng: np.random.Generator) -> _World:
    club = f"{fictional_word(rng, 3)} {pick(rng, ['Rovers', 'Comets', 'Harriers', 'Falcons'])}"
    cup, year = f"{fictional_word(rng)} Cup", _year(rng, 1950, 2024)
    stadium, seats = f"{fictional_word(rng)} Park", int(rng.integers(800, 60_000))
    coach = fictional_person(rng)
    facts = [f"The {club} won the {cup} in {year} under the coach {coach}.",
             f"The {club} play at {stadium}, which seats {seats:,}."]
    question, answer, match, wrong = pick(rng, [
        (f"How many seats does the stadium of the club that won the {cup} in {year} have?",
         str(seats), "number", [str(seats + 1500), str(seats // 2)]),
        (f"Who coached the {club} when they won the {cup}?", coach, "contains",
         [fictional_person(rng), fictional_person(rng)]),
    ])
    return _World(facts, question, answer, match, [f"{cup} {year} winner", club], wrong)


def _novel(rng: np.random.Generator) -> _World:
    title, sequel = (f"The {fictional_word(rng)} {pick(rng, ['Tide', 'Ledger', 'Orchard'])}",
                     f"Return to {fictional_word(rng, 3)}")
    author, publisher = fictional_person(rng), f"{fictional_word(rng)} Press"
    other_publisher, year = f"{fictional_word(rng)} Books", _year(rng, 1900)
    facts = [f"{title} is a novel by {author}, first published in {year} by {publisher}.",
             f"Its sequel, {sequel}, appeared {int(rng.integers(2, 9))} years later from "
             f"{other_publisher}."]
    question, answer, match, wrong = pick(rng, [
        (f"Which publisher brought out the sequel to {title}?", other_publisher, "contains",
         [publisher, f"{fictional_word(rng)} House"]),
        (f"Who wrote {title}?", author, "contains", [fictional_person(rng)]),
    ])
    return _World(facts, question, answer, match, [title, f"{title} sequel"], wrong)


_TEMPLATES: tuple[Callable[[np.random.Generator], _World], ...] = (
    _town, _company, _discovery, _club, _novel)


def _call(name: str, arguments: dict[str, object]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def search_world_scenario(seed: int) -> Scenario:
    """The fictional search world of one seed."""
    rng = np.random.default_rng(seed)
    world = pick(rng, _TEMPLATES)(rng)
    calls = [*(_call("web_search", {"queries": [query]}) for query in world.queries),
             _call("web_extractor", {"url": f"https://www.{_slug(world.queries[0])}.example/"})]
    answers = [*dict.fromkeys(f"The answer is {a}." for a in (world.answer, *world.wrong_answers))]
    candidates, solution = shuffled(rng, [*calls, *answers], [0, len(calls)])
    return Scenario(
        id=f"search-gen-{seed}", domain="search",
        instruction=f"{world.question} Search the web, then answer in one sentence.",
        world="\n".join(f"- {fact}" for fact in world.facts),
        reference_answer=world.answer,
        reward=RewardSpec(checks=[Check(check="answer_matches", match=world.match),
                                  Check(check="answer_observed", match=world.match)]),
        candidate_actions=candidates, solution=solution, fictional=True)
