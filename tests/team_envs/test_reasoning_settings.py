"""reasoning-v0 keeps answers its scorer would take seconds over away from that scorer."""

from __future__ import annotations

import pettingzoo
import pytest

import team_envs  # noqa: F401

pytest.importorskip("reasoning_gym")


def test_a_long_propositional_formula_is_refused_before_the_quadratic_scorer(
        monkeypatch) -> None:
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", task="propositional_logic",
                          n_agents=2, held_out=2, max_message_chars=10_000)
    dataset, given = env.unwrapped.task.dataset, []
    score = dataset.score_answer
    monkeypatch.setattr(dataset, "score_answer",
                        lambda answer, entry: given.append(answer) or score(answer, entry))

    def play(answer: str) -> dict:
        env.reset(seed=0, options={"split": "test", "index": 0})
        env.step("work")
        env.step(f"ANSWER: {answer}")
        return env.infos["agent_0"]["verdict"]

    env.reset(seed=0, options={"split": "test", "index": 0})
    premise = max(env.unwrapped.episode.problem.details["entry"]["metadata"]["premises"], key=len)
    play(premise)  # a premise follows from the premises
    assert env.rewards["agent_0"] > 0 and given == [premise]
    variable = premise.strip("()¬ ")[0]
    for formula in ("¬" * 3990 + variable, " ∧ ".join([variable] * 990)):
        verdict = play(formula)  # seconds each in the scorer: parsing is quadratic
        assert not verdict["passed"] and "longer than 200 characters" in verdict["error"]
    assert given == [premise]
