"""reasoning-gym tasks as text teams: the dataset's scorer, held-out items never trained on."""

from __future__ import annotations

import pettingzoo
import pytest

import team_envs  # noqa: F401

pytest.importorskip("reasoning_gym")


def _play(env, messages: list[str]) -> dict:
    for message in messages:
        env.step(message)
    return env.infos["agent_0"]


def test_the_answerer_is_scored_by_the_datasets_own_scorer() -> None:
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", task="basic_arithmetic",
                          n_agents=2)
    env.reset(seed=0, options={"split": "test", "index": 3})
    problem = env.unwrapped.episode.problem
    assert problem.statement == env.unwrapped.task.dataset[3]["question"]
    assert problem.statement in env.observe("agent_1")["text"]
    info = _play(env, ["Let me work it out.", f"So:\nANSWER: {problem.answer}"])
    assert env.rewards["agent_0"] == 1.0 and info["verdict"]["passed"]
    env.reset(seed=0, options={"split": "test", "index": 3})
    _play(env, ["Let me work it out.", f"ANSWER: {int(problem.answer) + 1}"])
    assert env.rewards["agent_1"] == 0.0


def test_training_never_draws_a_held_out_question() -> None:
    """chain_sum with one-digit, two-term sums has few distinct questions: many draws
    collide with the held-out set, and every one is redrawn."""
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", task="chain_sum", n_agents=2,
                          held_out=40, config={"min_terms": 2, "max_terms": 2,
                                               "min_digits": 1, "max_digits": 1})
    task = env.unwrapped.task
    held_out = {task.held_out_problem(i).statement for i in range(40)}
    trained = set()
    for seed in range(300):
        env.reset(seed=seed)
        trained.add(env.unwrapped.episode.problem.statement)
    assert trained and not trained & held_out
    overlap_without_the_rule = {task.dataset[i]["question"] for i in range(40, 2000)}
    assert overlap_without_the_rule & held_out  # the rule has work to do here


def test_same_seed_same_problem_and_options_pick_held_out_items() -> None:
    def statement(**reset) -> str:
        env = pettingzoo.make("aec", "team_envs/reasoning-v0", task="gsm_symbolic")
        env.reset(**reset)
        return env.unwrapped.episode.problem.statement

    assert statement(seed=5) == statement(seed=5) != statement(seed=6)
    assert statement(seed=1, options={"split": "test", "index": 2}) == statement(
        seed=9, options={"split": "test", "index": 2})


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"task": "basic_arithmetik"}, "did you mean 'basic_arithmetic'"),
    ({"task": "chain_sum", "config": {"seed": 3}}, "dataset_seed"),
    ({"task": "chain_sum", "config": {"min_terms": 5, "max_terms": 2}}, "refused chain_sum"),
    ({"held_out": 0}, "held_out"),
    ({"held_out": 10, "size": 10}, "size must be an integer >= 11"),
])
def test_bad_settings_are_refused_with_the_fix(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pettingzoo.make("aec", "team_envs/reasoning-v0", **kwargs)


def test_a_held_out_index_out_of_range_is_refused() -> None:
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", held_out=4)
    with pytest.raises(ValueError, match="from 0 to 3"):
        env.reset(seed=0, options={"split": "test", "index": 4})
