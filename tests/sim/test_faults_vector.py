"""Faults that end a step: a vector env is never left stuck, a judge fault is never silent, and
an answer that is not text is a counted fault wherever it comes from."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.registration import env_id, make
from agentworld_envs.sim.model_client import WorldModelFault

KEEPER = "search-lighthouse-keeper"
ANSWER = "It was Maren Holt."


def search(query: str) -> str:
    return f'{{"name": "web_search", "arguments": {{"queries": ["{query}"]}}}}'


BOOM = {"name": "scripted", "rules": [{"match": "BOOM", "error": "server down"}]}


@pytest.mark.parametrize(("settings", "error"), [
    ({"on_fault": "raise"}, WorldModelFault),
    ({"max_faults": 0}, TooManyFaultsError),
])
def test_a_raising_step_still_resets_the_episode_it_ended(settings: dict,
                                                          error: type[Exception]) -> None:
    envs = gym.make_vec(env_id("search"), num_envs=2, backend=BOOM, **settings)
    envs.reset(seed=0, options={"scenario": KEEPER})
    with warnings.catch_warnings(), pytest.raises(error) as raised:
        warnings.simplefilter("ignore")
        envs.step([search("BOOM"), ANSWER])  # sub-env 0 faults as sub-env 1 ends
    if error is WorldModelFault:  # what the step returned before the reset
        assert raised.value.faults == [0] and raised.value.results[1].closes_episode
        assert raised.value.results[1].info["termination"] == "final_answer"
    fresh = envs.unwrapped.episodes[1]
    assert not fresh.ended and fresh.turn == 0
    envs.unwrapped.sim.faults.max_faults = None  # a caller that chooses to go on
    obs, _, terminated, truncated, infos = envs.step([search("tea")] * 2)
    assert terminated.tolist() == [False, False] and truncated.tolist() == [False, False]
    assert infos["turn"].tolist() == [2, 1]  # sub-env 1 plays a fresh episode
    assert len(envs.unwrapped.episodes[1].transcript) == 1


def judged(judge: dict | Backend, **settings):
    env = make("search", backend="scripted", judge_backend=judge, reward_kind="judge",
               **settings)
    env.reset(seed=0, options={"scenario": KEEPER})
    return env


JUDGE_DOWN = {"name": "scripted", "rules": [{"match": "## Rubric", "error": "judge down"}]}


def test_a_failed_judge_warns_counts_and_marks_its_zero() -> None:
    env = judged(JUDGE_DOWN)
    with pytest.warns(RuntimeWarning, match="the judge .* judge down"):
        _, reward, terminated, _, info = env.step(ANSWER)
    breakdown = info["reward_breakdown"]
    assert terminated and reward == 0.0
    assert breakdown["judge_fault"] == "backend_error" and "judge" not in breakdown
    assert env.unwrapped.sim.faults.failed == 1


def test_a_failed_judge_raises_under_on_fault_raise() -> None:
    env = judged(JUDGE_DOWN, on_fault="raise")
    with pytest.raises(WorldModelFault, match="the judge") as raised:
        env.step(ANSWER)
    result = raised.value.results[0]
    assert raised.value.faults == [0] and result.closes_episode
    assert result.info["reward_breakdown"]["judge_fault"] == "backend_error"


class Answering(Backend):
    """A backend whose every answer is ``answer(request)``, whatever that is."""

    name = "answering"

    def __init__(self, answer: Callable[[ChatRequest], object]) -> None:
        self.answer = answer

    def complete(self, requests: Sequence[ChatRequest]) -> list:
        return [self.answer(request) for request in requests]


BAD_ANSWERS = {"None": lambda r: None, "text=None": lambda r: Completion(text=None),
               "bytes": lambda r: Completion(text=b"<predicted_observation>x")}


@pytest.mark.parametrize("answer", BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_a_world_model_answer_that_is_not_text_is_a_counted_fault(answer) -> None:
    env = make("search", backend=Answering(answer))
    env.reset(seed=0, options={"scenario": KEEPER})
    with pytest.warns(RuntimeWarning, match="the world model"):
        _, _, _, _, info = env.step(search("keeper"))
    assert info["world_model"]["fault"] == "backend_error"
    assert info["observation_source"] == "fallback"
    assert env.unwrapped.sim.faults.failed == 1


@pytest.mark.parametrize("answer", BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_a_judge_answer_that_is_not_text_is_a_counted_fault(answer) -> None:
    env = judged(Answering(answer))
    with pytest.warns(RuntimeWarning, match="the judge"):
        _, reward, terminated, _, info = env.step(ANSWER)
    assert terminated and reward == 0.0
    assert info["reward_breakdown"]["judge_fault"] == "backend_error"
    assert "not a completion with text" in info["reward_breakdown"]["judge_error"]
    assert env.unwrapped.sim.faults.failed == 1
