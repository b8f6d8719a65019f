"""A BatchingBackend never closed lets its dispatcher thread end and its inner backend go."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from agentworld_envs.backends import BackendError, ChatRequest
from agentworld_envs.backends.batching import BatchingBackend
from agentworld_envs.backends.scripted import ScriptedBackend

HANG_GUARD_S = 60.0
"""Only a leaked thread waits this long."""

TRIES = 600

RULES = [{"match": "^fail$", "error": "scripted fault"},
         {"match": "^never sent$", "reply": "slow", "delay_s": 0.001}]
"""A delay makes the scripted backend blocking, so its calls go through the dispatcher."""


def _request(text: str) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}])


def _ends(thread: threading.Thread) -> bool:
    """Whether ``thread`` ends within the guard while garbage is collected (a caller's error
    is a cycle, through its traceback's frames, that holds the backend until then)."""
    for _ in range(TRIES):
        gc.collect()
        thread.join(HANG_GUARD_S / TRIES)
        if not thread.is_alive():
            return True
    return False


def test_unclosed_backends_end_their_threads_and_free_their_inner_backends() -> None:
    threads: list[threading.Thread] = []
    inners: list[weakref.ref[ScriptedBackend]] = []
    for _ in range(10):
        inner = ScriptedBackend(RULES)
        shared = BatchingBackend(inner, window_s=0)
        assert inner.blocking
        assert len(shared.complete([_request("a"), _request("b")])) == 2
        with pytest.raises(BackendError, match="scripted fault"):
            shared.complete([_request("fail")])
        assert len(shared.complete([_request("after a sleep")])) == 1  # woken, not restarted
        assert shared.stats()["batches"] == 3
        threads.append(shared._dispatcher)
        inners.append(weakref.ref(inner))
        del inner, shared
    assert len(set(threads)) == 10
    assert all(_ends(thread) for thread in threads)
    gc.collect()
    assert sum(ref() is not None for ref in inners) == 0

