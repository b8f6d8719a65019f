"""A fault tally keeps a bounded number of reasons however long its run fails.

It told reasons apart by their text with the digits masked, and kept one entry (and its text)
per reason for good. A server whose error quotes a request id (OpenAI's "Please include the
request ID req_4c5f... in your message") gave every failure a reason of its own: an env (whose
``max_faults`` is unbounded by default) that met 450 such failures kept 450 reasons, and its
summary read "1x ...; 449 other reason(s)".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.backends.faults import FaultTally

SEARCH = '{"name": "web_search", "arguments": {"queries": ["lighthouse"]}}'


def request_id(n: int) -> str:
    """A request id as servers write them: hex digits and letters, new for each call."""
    return "req_" + hashlib.sha256(str(n).encode()).hexdigest()[:32]


class FailingServer(Backend):
    """Every call fails with an HTTP 500 that quotes the call's own request id."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "model": "m"}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += 1
        raise BackendError(f"HTTP 500: The server had an error. (Please include the request ID "
                           f"{request_id(self.calls)} in your message.)")


def tally_size(tally: FaultTally) -> tuple[int, int]:
    return len(tally.reasons), sum(map(len, tally.examples.values()))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # each faulted step warns
def test_an_env_whose_server_quotes_request_ids_keeps_one_reason() -> None:
    env = gym.make("AgentWorld/Search-v0", backend=FailingServer())
    env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    faults = env.unwrapped.sim.faults

    def play(steps: int) -> tuple[int, int]:
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(SEARCH)
            if terminated or truncated:
                env.reset(options={"scenario": "search-lighthouse-keeper"})
        return tally_size(faults)

    after_n = play(30)
    assert play(30) == after_n == (1, 2)
    assert faults.summary().startswith("60 of 60 model calls failed (60x backend_error: "
                                       "BackendError: HTTP 500: ")
    env.close()


def test_reasons_past_the_first_hundred_are_counted_as_one() -> None:
    tally = FaultTally(max_faults=None)
    words = ["".join(chr(ord("a") + int(d)) for d in str(n)) for n in range(2000)]
    tally.add(1000, words[:1000])  # no two alike, and no digit to mask
    after_n = tally_size(tally)
    tally.add(1000, words[1000:])
    assert tally_size(tally) == after_n == (101, 101)
    assert tally.failed == sum(tally.reasons.values()) == 2000
    assert tally.summary() == ("2000 of 2000 model calls failed (1900x one of the reasons past "
                               "the first 100; 100 other reason(s))")
