"""The greedy memo shared by a call that outlived its timeout and the next call."""

from __future__ import annotations

import threading

from agentworld_envs.backends.greedy_memo import GreedyMemo
from agentworld_envs.protocol.chat import Completion


class _Key(str):
    """A key that, the second time it is hashed in a lookup, lets another thread put a new
    answer (which evicts this one from a memo of size 1) before the lookup goes on."""

    __slots__ = ()
    hashed = 0
    other: threading.Thread | None = None

    def __hash__(self) -> int:
        type(self).hashed += 1
        if type(self).hashed == 2 and type(self).other is not None:
            type(self).other.start()
            type(self).other.join(timeout=1.0)  # a memo that locks makes it wait: that is fine
        return str.__hash__(self)


def test_an_answer_evicted_by_another_thread_mid_lookup_is_no_crash() -> None:
    memo = GreedyMemo(size=1)
    memo.put("prompt", Completion("kept"))
    key = _Key("prompt")  # an equal key, not the kept one: each lookup hashes it
    _Key.hashed = 0
    _Key.other = threading.Thread(target=memo.put, args=("other", Completion("new")))
    kept = memo.get(key)  # hashes the key in the lookup, then again to mark it recent
    _Key.other.join(timeout=600)
    assert kept is not None and kept.text == "kept"
    assert memo.get("other").text == "new" and memo.get(key) is None
