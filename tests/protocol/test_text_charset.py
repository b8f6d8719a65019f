"""``UnicodeText`` hands Gymnasium its sampling charset in a fixed order. It passed a frozenset,
which Gymnasium 1.1-1.3 keep in set order, varying with ``PYTHONHASHSEED``: a seeded
``action_space.sample()`` then differed from process to process (a replay test drew a prompt of
8,420 tokens under one hash seed and of fewer under another)."""

from __future__ import annotations

from typing import Any

import gymnasium
import pytest

from agentworld_envs.protocol.text_space import SAMPLE_CHARSET, UnicodeText


def test_the_charset_reaches_gymnasium_as_an_ordered_string(
        monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[Any] = []
    original = gymnasium.spaces.Text.__init__

    def capture(self: Any, *args: Any, charset: Any = None, **kwargs: Any) -> None:
        given.append(charset)
        original(self, *args, charset=charset, **kwargs)

    monkeypatch.setattr(gymnasium.spaces.Text, "__init__", capture)
    UnicodeText(100)
    assert given == ["".join(sorted(SAMPLE_CHARSET))]
