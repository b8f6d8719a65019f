"""Counting a model's forward passes, and acting during one of them (the cancel tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ForwardPasses:
    """Counts ``model``'s forward passes; ``then()`` runs during pass ``at``."""

    def __init__(self, model: Any, at: int, then: Callable[[], Any]) -> None:
        self.count, self._at, self._then = 0, at, then
        self._handle = model.register_forward_hook(self._hook)

    def _hook(self, *_: Any) -> None:
        self.count += 1
        if self.count == self._at:
            self._then()

    def remove(self) -> None:
        self._handle.remove()
