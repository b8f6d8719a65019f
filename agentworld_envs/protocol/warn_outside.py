"""Warnings whose text changes from one to the next, without keeping each of them for good."""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn_outside"]


def warn_outside(message: str, category: type[Warning]) -> None:
    """Warn at the caller's first frame outside this package and gymnasium (the user's
    ``gym.make``, ``step`` or constructor call, however deep it reached here), as
    ``warnings.warn`` does, but in a registry of its own: the caller's module's
    ``__warningregistry__`` would keep each warning whose text holds a running count or an
    id (new every time) for good."""
    frame = sys._getframe(1)
    while frame.f_back and frame.f_globals.get("__name__", "").startswith(
            ("agentworld_envs.", "gymnasium.")):
        frame = frame.f_back
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"), registry={})
