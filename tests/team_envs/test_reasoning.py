"""reasoning-gym tasks as text teams: the dataset's scorer, held-out items never trained on."""

from __future__ import annotations

import json

import numpy as np
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


def _env(task: str, **kwargs):
    return pettingzoo.make("aec", "team_envs/reasoning-v0", task=task, n_agents=2, held_out=2,
                           size=20, **kwargs)


@pytest.mark.parametrize("task", ["tower_of_hanoi", "palindrome_partitioning"])
def test_a_correct_answer_longer_than_the_message_cap_is_kept_whole_and_scores(task: str) -> None:
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", task=task, n_agents=2, held_out=20,
                          size=200)
    items = env.unwrapped.task
    lengths = [len(str(items.held_out_problem(i).answer)) for i in range(20)]
    long = next(i for i, length in enumerate(lengths) if length > 4000)
    env.reset(seed=0, options={"split": "test", "index": long})
    gold = str(env.unwrapped.episode.problem.answer)
    _play(env, ["work", f"ANSWER: {gold}"])
    assert env.unwrapped.episode.transcript[-1]["content"] == f"ANSWER: {gold}"
    assert env.rewards["agent_0"] == 1.0
    env.reset(seed=0, options={"split": "test", "index": long})
    _play(env, ["work", f"ANSWER: {gold}" + " and more" * 1000])  # cut just after the answer
    assert env.unwrapped.episode.transcript[-1]["content"] == f"ANSWER: {gold}"
    short = next(i for i, length in enumerate(lengths) if length < 3000)
    assert items.message_limit(items.held_out_problem(short)) == 4000


@pytest.mark.parametrize("task", ["rotate_matrix", "n_queens", "tower_of_hanoi"])
def test_a_multi_line_answer_is_read_whole(task: str) -> None:
    env = _env(task)
    env.reset(seed=0, options={"split": "test", "index": 0})
    gold = env.unwrapped.episode.problem.answer
    assert "\n" in gold
    info = _play(env, ["work", f"Here it is.\nANSWER:\n{gold}\n"])
    assert env.rewards["agent_1"] == 1.0 and info["verdict"]["answer"] == gold


@pytest.mark.parametrize(("task", "answer"), [
    ("prime_factorization", "not sure"),  # ValueError
    ("coin_flip", "9" * 400), ("time_intervals", "9" * 400),  # OverflowError
    ("boxnet", "5"),  # TypeError
    ("game_of_life", json.dumps({"a": {"b": 1}})),  # KeyError
], ids=["ValueError", "OverflowError", "OverflowError-2", "TypeError", "KeyError"])
def test_a_scorer_error_scores_zero_and_ends_the_episode(task: str, answer: str) -> None:
    env = _env(task)
    env.reset(seed=0, options={"split": "test", "index": 0})
    info = _play(env, ["work", f"ANSWER: {answer}"])
    assert all(env.terminations.values()) and env.rewards["agent_0"] == 0.0
    assert info["verdict"]["error"].startswith("the scorer raised")
    env.reset(seed=1)  # and the env plays on
    _play(env, ["work", "ANSWER: 2"])
    assert all(env.terminations.values())


def _spy(monkeypatch, env, gold: str) -> list[str]:
    """Record the answers given to the dataset's scorer; score only ``gold`` (another answer
    could take the real scorer minutes)."""
    dataset, given = env.unwrapped.task.dataset, []
    score = dataset.score_answer

    def spy(answer: str, entry: dict) -> float:
        given.append(answer)
        return score(answer, entry) if answer == gold else 0.0

    monkeypatch.setattr(dataset, "score_answer", spy)
    return given


@pytest.mark.parametrize(("task", "answer", "error"), [
    ("countdown", "9**9**9**9", "not an arithmetic expression"),  # never returns
    ("puzzle24", "(9**100)**100", "larger than 100"),
    ("polynomial_multiplication", "1e999999", "exponent of five or more digits"),  # ~50 s
    ("simple_integration", "__import__('os').getpid()", "not an arithmetic expression"),
    ("intermediate_integration", "*".join(f"(x + {i})**8" for i in range(1, 20)),
     "larger than 100"),  # about a minute of sympy simplify
    ("coin_flip", "9" * 300 + "e" + "9" * 300, "exponent"),  # Fraction expands it
    ("string_insertion", "__import__('os').getpid()", "Python code"),  # eval'd by the scorer
    ("n_queens", " ().__class__.__bases__[0].__subclasses__()", "Python code"),
    ("basic_arithmetic", "1" * 5000, "longer than 4000 characters"),
], ids=["pow-chain", "nested-pow", "big-exponent", "sympy-code", "big-product",
        "fraction-exponent", "eval-code", "eval-code-2", "too-long"])
@pytest.mark.filterwarnings("ignore:.*string hashing")
def test_answers_the_scorer_cannot_safely_take_are_refused(monkeypatch, task: str, answer: str,
                                                           error: str) -> None:
    env = _env(task, max_message_chars=10_000)
    env.reset(seed=0, options={"split": "test", "index": 0})
    gold = env.unwrapped.episode.problem.answer
    given = _spy(monkeypatch, env, gold)
    info = _play(env, ["work", f"ANSWER: {gold}"])
    assert env.rewards["agent_0"] == 1.0 and given == [gold]  # the reference answer is scored
    env.reset(seed=0, options={"split": "test", "index": 0})
    info = _play(env, ["work", f"ANSWER: {answer}"])
    assert env.rewards["agent_0"] == 0.0 and error in info["verdict"]["error"]
    assert given == [gold]  # never given to the scorer


@pytest.mark.parametrize(("score", "reward"), [(1.5, 1.0), (-0.5, 0.0), (float("nan"), 0.0)])
def test_scores_are_clamped_to_the_unit_interval(monkeypatch, score: float,
                                                 reward: float) -> None:
    env = _env("basic_arithmetic")
    monkeypatch.setattr(env.unwrapped.task.dataset, "score_answer", lambda answer, entry: score)
    env.reset(seed=0)
    _play(env, ["work", "ANSWER: 1"])
    assert env.rewards["agent_0"] == reward


def test_a_nondeterministic_dataset_is_refused() -> None:
    """reasoning-gym's list_functions draws from the global random module."""
    with pytest.raises(ValueError, match="list_functions is not deterministic"):
        _env("list_functions")


def test_held_out_items_are_kept_from_construction(monkeypatch) -> None:
    task = _env("basic_arithmetic").unwrapped.task
    first = task.dataset[1]["question"]

    def regenerate(self, index):
        raise AssertionError("held-out items are not generated again")

    monkeypatch.setattr(type(task.dataset), "__getitem__", regenerate)
    assert task.held_out_problem(np.int64(1)).statement == first


def test_hash_dependent_datasets_warn_without_a_fixed_hash_seed(monkeypatch) -> None:
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    with pytest.warns(UserWarning, match="PYTHONHASHSEED"):
        _env("ransom_note")
