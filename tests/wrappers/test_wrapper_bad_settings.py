"""Bad wrapper settings: one ValueError naming the setting, before any space is built or any
tokenizer download tried (they failed in Gymnasium's spaces, in ``<``, or in the Hub client)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import floor_tasks  # noqa: F401 - registers the AgentFloor ids
from agentworld_envs.wrappers import (
    DiscreteCandidateActions,
    TokenizeObservation,
    load_tokenizer,
    wrap_for_sb3,
)


def _env() -> gym.Env:
    return gym.make("AgentFloor/A2-v0")


@pytest.mark.parametrize("value", [None, "8", 8.0, True])
def test_max_candidates_must_be_an_integer(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^max_candidates must be an integer >= 1, got "):
        DiscreteCandidateActions(_env(), max_candidates=value)


@pytest.mark.parametrize("value", [None, 3, b"give up"])
def test_the_fallback_action_must_be_text(value: Any) -> None:
    """Any value was kept, and played as the action of every padding index."""
    with pytest.raises(ValueError, match=r"^fallback_action must be a text action, got "):
        DiscreteCandidateActions(_env(), max_candidates=8, fallback_action=value)


@pytest.mark.parametrize("value", [None, "64", 64.0, True])
def test_max_length_must_be_an_integer(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^max_length must be an integer >= 1, got "):
        TokenizeObservation(_env(), max_length=value)


@pytest.mark.parametrize("value", ["64", 64.0])
def test_candidate_length_must_be_an_integer(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^candidate_length must be an integer >= 1, got "):
        wrap_for_sb3(_env(), max_candidates=3, candidate_length=value)


@pytest.mark.parametrize("name", [None, "", 3, True])
def test_a_tokenizer_that_names_none_is_refused_before_any_download(
        monkeypatch: pytest.MonkeyPatch, name: Any) -> None:
    """``None`` was looked up on the Hub as "None" (minutes of retries offline)."""
    def hub(name: str) -> None:
        raise AssertionError(f"a Hugging Face tokenizer was loaded for {name!r}")

    monkeypatch.setattr("agentworld_envs.wrappers.tokenizers.HFTokenizer", hub)
    with pytest.raises(ValueError, match=r"^tokenizer must be 'bytes' or a Hugging Face "):
        load_tokenizer(name)
