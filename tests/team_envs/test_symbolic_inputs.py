"""Symbolic teams: reset options, very long text messages, and the batched path's invalid
messages, each as the env treats them."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pettingzoo
import pytest

import team_envs  # noqa: F401
from team_envs.symbolic import RelayTask


@pytest.mark.parametrize("env_id", ["team_envs/relay-v0", "team_envs/referential-v0",
                                    "team_envs/compositional-v0"])
def test_asking_a_symbolic_team_for_a_held_out_split_raises(env_id: str) -> None:
    env = pettingzoo.make("aec", env_id)
    with pytest.raises(ValueError, match="keeps no held-out split"):
        env.reset(seed=0, options={"split": "test", "index": 3})
    env.reset(seed=0, options={"split": "train"})
    assert env.agent_selection == "agent_0"


@pytest.mark.parametrize("text", ["a" * 4_000_000, "a b " * 1_000_000], ids=["word", "words"])
def test_a_very_long_text_message_is_refused_without_a_copy_per_character(text: str) -> None:
    task = RelayTask(message_length=2)
    tracemalloc.start()
    try:
        assert task.parse_message(text) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(text)  # one copy at most, not a list entry per character
    assert task.parse_message("c" + " " * 1_000_000 + "a").tolist() == [2, 0]


def test_the_batched_path_empties_a_partly_invalid_message_as_the_env_does() -> None:
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=2, vocab_size=4,
                          message_length=2)
    env.reset(seed=0)
    secret = env.observe("agent_0")["private"].copy()
    partly_invalid = np.array([secret[0], 9])
    env.step(secret)
    env.step(partly_invalid)
    task = env.unwrapped.task
    batch = task.batch([secret[None], np.zeros((1, 0), dtype=np.int64)])
    batch.act(secret[None])
    batch.act(partly_invalid[None])
    assert batch.messages.tolist() == env.unwrapped.episode.batch.messages.tolist()
    assert batch.score().tolist() == [env.rewards["agent_0"]] == [0.0]


def test_the_batched_path_refuses_messages_that_are_not_integers() -> None:
    task = RelayTask(n_agents=2, vocab_size=4)
    batch = task.batch([np.array([[1]]), np.zeros((1, 0), dtype=np.int64)])
    with pytest.raises(TypeError, match="integer symbol ids"):
        batch.act(np.array([[1.7]]))
    assert batch.turn == 0


def test_the_batched_path_refuses_a_message_after_every_agent_has_spoken() -> None:
    task = RelayTask(n_agents=2, vocab_size=4)
    batch = task.batch([np.array([[1]]), np.zeros((1, 0), dtype=np.int64)])
    batch.act(np.array([[1]]))
    batch.act(np.array([[1]]))
    with pytest.raises(RuntimeError, match="all 2 agents have spoken"):
        batch.act(np.array([[2]]))
    assert batch.score().tolist() == [1.0]
