"""A recording backend says once that it replays, and keeps no copy of what it said.

Its ``warnings.warn`` holds the number of answers the file held, which grows as a run records,
so each new backend's warning was new, and Python's default filter kept each in the caller's
module's ``__warningregistry__`` for good: a run that made one env after another on one
``record_path`` grew by one entry per env, 150 after 150 envs.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from agentworld_envs.backends import ChatRequest, SamplingParams, make_backend
from agentworld_envs.backends.replay import RecordingBackend, ReplayedWarning
from tests.helpers.warnings_registry import registered_warnings


def ask(text: str) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], sampling=SamplingParams())


def test_backends_made_one_after_another_on_a_growing_file_keep_no_warning(
        tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with RecordingBackend(make_backend("scripted"), path) as first:
        first.complete_each([ask("first")])

    def run(backends: int, start: int) -> int:
        for n in range(start, start + backends):  # each replays "first", records one more
            with RecordingBackend(make_backend("scripted"), path) as backend:
                backend.complete_each([ask("first"), ask(f"new {n}")])
        return registered_warnings()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per message and place
        kept = run(1, 0)  # a filter change empties a registry at its next warning
        after_n = run(20, 1)
        assert run(20, 21) == after_n == kept
    replayed = [str(w.message) for w in caught if w.category is ReplayedWarning]
    assert len(replayed) == 41
    assert replayed[-1].startswith(f"{path} already holds 41 recorded answer(s): 1 of these 2 ")
