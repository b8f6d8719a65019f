"""reasoning-v0's held-out items stay unseen in training under any wording or spacing of the
same item, and the held-out set holds distinct items, the same on every construction."""

from __future__ import annotations

import numpy as np
import pytest

from team_envs.text.reasoning import ReasoningGymTask

pytest.importorskip("reasoning_gym")

SUMS = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
"""One-digit sums of two terms: few distinct items, so items repeat often."""


def _expression(entry: dict) -> str:
    """What a basic_arithmetic item asks, however it is worded or spaced."""
    return "".join(entry["metadata"]["expression"].split())


def _held_out(task: ReasoningGymTask) -> list[dict]:
    return [task.held_out_problem(i).details["entry"] for i in range(task.held_out)]


@pytest.mark.parametrize("style", [{"format_style": "natural"}, {"whitespace": "random"}])
def test_training_never_draws_a_held_out_item_reworded_or_respaced(style: dict) -> None:
    task = ReasoningGymTask(task="basic_arithmetic", config={**SUMS, **style}, held_out=48,
                            n_agents=2)
    held_out = {_expression(entry): entry["question"] for entry in _held_out(task)}
    rng = np.random.default_rng(0)
    drawn = [task.generate(rng).details["entry"] for _ in range(3000)]
    assert not [entry["question"] for entry in drawn if _expression(entry) in held_out]
    # the same expressions come in other questions: matching questions alone lets them through
    reworded = [entry for entry in map(task.dataset.__getitem__, range(48, 1000))
                if held_out.get(_expression(entry), entry["question"]) != entry["question"]]
    assert reworded


def test_the_held_out_items_are_distinct_and_the_same_on_every_construction() -> None:
    def held_out(config: dict, count: int) -> list[dict]:
        return _held_out(ReasoningGymTask(task="basic_arithmetic", config=config,
                                          held_out=count, n_agents=2))

    natural = held_out({**SUMS, "format_style": "natural"}, 48)
    assert len({_expression(entry) for entry in natural}) == 48
    assert natural == held_out({**SUMS, "format_style": "natural"}, 48)
    # the committed teamtr_reasoning results were scored on the dataset's first 32 items
    first = held_out(SUMS, 32)
    assert [entry["metadata"]["source_index"] for entry in first] == list(range(32))


def _syntax(entry: dict) -> str:
    """What a basic_arithmetic item computes, however bracketed: its expression's syntax tree."""
    import ast

    return ast.dump(ast.parse(entry["metadata"]["expression"], mode="eval"))


def test_training_never_draws_a_held_out_item_bracketed_otherwise() -> None:
    """Held-out "Calculate ( -9 / 9 )." was drawn in training as "Calculate -9 / 9." (52 of
    5,000 draws repeated a held-out item so), and both stood in a 48-item held-out set."""
    task = ReasoningGymTask(task="basic_arithmetic", config=SUMS, held_out=48, n_agents=2)
    held_out = {_syntax(entry) for entry in _held_out(task)}
    assert len(held_out) == 48
    rng = np.random.default_rng(0)
    drawn = [task.generate(rng).details["entry"] for _ in range(3000)]
    assert not [entry["question"] for entry in drawn if _syntax(entry) in held_out]
