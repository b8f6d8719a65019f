"""Greedy answers kept for reuse: an env that comes back to a state it has seen is answered
without generating. Exact, since greedy decoding is deterministic: the key is everything that
decides the answer (the prompt the model reads and the sampling settings, seed aside).

Example:
    >>> from agentworld_envs.protocol.chat import Completion
    >>> memo = GreedyMemo(size=1)
    >>> memo.put("a", Completion("first")); memo.put("b", Completion("second"))
    >>> memo.get("a") is None, memo.get("b").text  # the least recently used went
    (True, 'second')
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict

from agentworld_envs.protocol.chat import Completion

__all__ = ["GreedyMemo"]


class GreedyMemo:
    """The last ``size`` greedy answers by key, least recently used dropped first; answers go
    in and come out as copies, so a caller's edits never reach another's. 0 keeps none. Safe to
    share between threads (a call that outlived a timeout may still be running)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._answers: OrderedDict[str, Completion] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        """A copy of the answer kept under ``key``, if any (which makes it the most recent)."""
        with self._lock:
            answer = self._answers.get(key)
            if answer is None:
                return None
            self._answers.move_to_end(key)
        return copy.deepcopy(answer)

    def put(self, key: str, answer: Completion) -> None:
        """Keep a copy of ``answer`` under ``key``."""
        if not self.size:
            return
        answer = copy.deepcopy(answer)
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
