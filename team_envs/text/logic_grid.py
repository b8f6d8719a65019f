"""Small logic grids (``team_envs/logic_grid-v0``): who owns what, from clues.

Each person has exactly one value of every attribute and no two people share a value. Clues are
added in random order until exactly one assignment satisfies them, then clues that are not needed
for uniqueness are dropped. With ``split=True`` (the default) the clues are dealt out privately
among the agents, so they have to share what they know.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import (
    SharedContextEnv,
    SharedContextParallelEnv,
    check_flag,
    check_int,
    wrap,
)
from team_envs.text.base import Problem, ReasoningTask

__all__ = ["LogicGridTask", "Clue", "env", "raw_env", "parallel_env"]

PEOPLE = ("Ada", "Ben", "Cyd", "Dov")
ATTRIBUTES = {
    "pet": ("cat", "dog", "fish", "bird"),
    "color": ("red", "blue", "green", "white"),
    "drink": ("tea", "milk", "juice", "water"),
}


@dataclass(frozen=True)
class Clue:
    """``person`` has (or, with ``negated``, has not) ``value`` of ``attribute``; or, when
    ``other`` is set, whoever has ``value`` of ``attribute`` has (not) ``other_value`` of
    ``other``."""

    attribute: int
    value: int
    person: int | None = None
    other: int | None = None
    other_value: int | None = None
    negated: bool = False

    def holds(self, grids: np.ndarray) -> np.ndarray:
        """Which of the ``(k, attributes, people)`` candidate grids satisfy the clue."""
        has = grids[:, self.attribute, :] == self.value
        if self.person is not None:
            result = has[:, self.person]
        else:
            result = (has & (grids[:, self.other, :] == self.other_value)).any(axis=1)
        return ~result if self.negated else result

    def text(self, names: tuple[str, ...], attributes: list[tuple[str, tuple[str, ...]]]) -> str:
        """The clue in English."""
        attr, values = attributes[self.attribute]
        verb = "does not have" if self.negated else "has"
        if self.person is not None:
            return f"{names[self.person]} {verb} the {values[self.value]} {attr}."
        other, other_values = attributes[self.other]
        return (f"The person with the {values[self.value]} {attr} {verb} the "
                f"{other_values[self.other_value]} {other}.")


@functools.cache
def _all_grids(people: int, attributes: int) -> np.ndarray:
    """Every assignment: ``(people!^attributes, attributes, people)`` value indices."""
    perms = list(itertools.permutations(range(people)))
    return np.array([list(combo) for combo in itertools.product(perms, repeat=attributes)],
                    dtype=np.int8)


def _solutions(clues: list[Clue], grids: np.ndarray) -> int:
    """How many grids satisfy every clue."""
    alive = np.ones(len(grids), dtype=bool)
    for clue in clues:
        alive &= clue.holds(grids)
    return int(alive.sum())


class LogicGridTask(ReasoningTask):
    """Logic-grid puzzles.

    Args:
        people: People in the grid, 2 to 4.
        attributes: Attributes per person, 1 to 3 (pet, color, drink).
        split: Deal the clues out privately among the agents.
        **kwargs: See :class:`~team_envs.text.base.TextTeamTask`.
    """

    family = "logic_grid"
    answer_format = "ANSWER: <name>"

    def __init__(self, people: int = 3, attributes: int = 2, split: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        people = check_int("people", people, 2, len(PEOPLE))
        attributes = check_int("attributes", attributes, 1, len(ATTRIBUTES))
        self.names = PEOPLE[:people]
        self.attributes = [(name, values[:people])
                           for name, values in list(ATTRIBUTES.items())[:attributes]]
        self.split = check_flag("split", split)

    def _candidate_clues(self, solution: np.ndarray) -> list[Clue]:
        people, n_attr = len(self.names), len(self.attributes)
        clues = []
        for a in range(n_attr):
            for person in range(people):
                for value in range(people):
                    clues.append(Clue(a, value, person=person,
                                      negated=bool(solution[a, person] != value)))
            for b in range(a + 1, n_attr):
                for value in range(people):
                    owner = int(np.flatnonzero(solution[a] == value)[0])
                    for other_value in range(people):
                        clues.append(Clue(a, value, other=b, other_value=other_value,
                                          negated=bool(solution[b, owner] != other_value)))
        return clues

    def generate(self, rng: np.random.Generator) -> Problem:
        """A random solution, a minimal set of clues that pins it down, and a question."""
        people, n_attr = len(self.names), len(self.attributes)
        solution = np.stack([rng.permutation(people) for _ in range(n_attr)])
        grids = _all_grids(people, n_attr)
        pool = self._candidate_clues(solution)
        alive = np.ones(len(grids), dtype=bool)
        chosen: list[Clue] = []
        for k in rng.permutation(len(pool)):
            if alive.sum() == 1:
                break
            clue = pool[int(k)]
            narrowed = alive & clue.holds(grids)
            if narrowed.sum() < alive.sum():
                chosen.append(clue)
                alive = narrowed
        for clue in list(chosen):
            rest = [c for c in chosen if c is not clue]
            if _solutions(rest, grids) == 1:
                chosen = rest
        stated = {(c.attribute, c.value) for c in chosen if c.person is not None and not c.negated}
        questions = [(a, v) for a in range(n_attr) for v in range(people) if (a, v) not in stated]
        attribute, value = questions[int(rng.integers(len(questions)))] if questions else (0, 0)
        owner = int(np.flatnonzero(solution[attribute] == value)[0])
        attr_name, values = self.attributes[attribute]
        clue_texts = [c.text(self.names, self.attributes) for c in chosen]
        described = "; ".join(f"{name}: {', '.join(vals)}" for name, vals in self.attributes)
        statement = (f"{', '.join(self.names)} each have one of every attribute ({described}); "
                     f"no two people share a value. Who has the {values[value]} {attr_name}?")
        briefs = [""] * self.n_agents
        if self.split:
            for k, text in enumerate(clue_texts):
                owner_agent = k % self.n_agents
                briefs[owner_agent] = " ".join(filter(None, [briefs[owner_agent], text]))
        else:
            statement += " Clues: " + " ".join(clue_texts)
        return Problem(statement, tuple(briefs), self.names[owner],
                       {"clues": clue_texts, "solution": solution.tolist()})

    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """1 when the answer names the right person and no one else."""
        named = [name for name in self.names
                 if re.search(rf"\b{name}\b", answer, re.IGNORECASE)]
        return float(named == [problem.answer]), {"expected": problem.answer, "named": named}


class raw_env(SharedContextEnv):
    """Logic grids as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "logic_grid_v0"}
    task_type = LogicGridTask


def env(**kwargs: Any) -> AECEnv:
    """Logic grids as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """Logic grids in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
