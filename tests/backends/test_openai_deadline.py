"""No attempt outlasts the call's time, ``timeout_s * (max_retries + 1)``: failing over to
another replica gets only what is left, and none starts once it is spent. Servers stall until
the test ends; what is asserted is which replicas were asked, never how long it took."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from agentworld_envs.backends import ChatRequest
from agentworld_envs.backends.openai_compat import OpenAIBackend, OpenAIRequestError
from tests.helpers.examples import HANG_GUARD_S
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response


def ask() -> ChatRequest:
    return ChatRequest([{"role": "user", "content": "hi"}])


@contextlib.contextmanager
def replicas(*stalling: bool):
    """One server per flag: those flagged stall until the block ends, the others answer."""
    release = threading.Event()

    def stall(hit: int, body: dict[str, Any]) -> Reply:
        release.wait(HANG_GUARD_S)
        return Reply(200, chat_response("late"))

    servers = [FakeOpenAIServer(stall if flag else (lambda h, b: Reply(200, chat_response("ok"))))
               for flag in stalling]
    with contextlib.ExitStack() as stack:
        for server in servers:
            stack.enter_context(server)
        stack.callback(release.set)  # runs first: the stalled replies end before the servers
        yield servers


def test_no_failover_starts_after_an_attempt_spent_the_calls_time() -> None:
    with replicas(True, False) as (stalled, healthy):
        backend = OpenAIBackend("m", [stalled.base_url, healthy.base_url], api_key_env=None,
                                timeout_s=0.3, max_retries=0, replica_cooldown_s=HANG_GUARD_S)
        (outcome,) = backend.complete_each([ask()])
        backend.timeout_s = HANG_GUARD_S  # the healthy replica's answers need no speed
        after = backend.complete_each([ask(), ask()])  # the stalled replica sits out
    assert isinstance(outcome, OpenAIRequestError) and outcome.attempts == 1
    assert "the end of the call's 0.3 s, timeout_s x (max_retries + 1)" in str(outcome)
    assert [getattr(c, "text", c) for c in after] == ["ok", "ok"]
    assert (stalled.hits, healthy.hits) == (1, 2)


def test_a_failover_attempt_gets_only_what_is_left_of_the_call() -> None:
    """0.6 s in all: the first replica's attempt takes 0.3 s, the second gets the rest, and
    the call ends there instead of trying a third replica and retrying after a backoff."""
    with replicas(True, True, True) as servers:
        backend = OpenAIBackend("m", [s.base_url for s in servers], api_key_env=None,
                                timeout_s=0.3, max_retries=1, backoff_s=0.001)
        (outcome,) = backend.complete_each([ask()])
    assert isinstance(outcome, OpenAIRequestError) and outcome.attempts == 2
    assert "the end of the call's 0.6 s" in str(outcome)
    # the third replica was never asked (the first two may not have read their request
    # within 0.3 s on a loaded machine: their attempts count, their hits need not)
    assert servers[2].hits == 0
