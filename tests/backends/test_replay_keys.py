"""Recordings replay what was recorded, whatever the text holds, and skip lines that are no
entry instead of failing to open."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.backends.replay import (
    RecordingBackend,
    ReplayBackend,
    RequestCache,
    completion_to_dict,
    legacy_request_key,
    request_key,
)

LONE = "\ud800"
"""A lone surrogate: valid JSON (``"\\ud800"``), not encodable as UTF-8 (an agent's action
may carry one)."""


def test_a_lone_surrogate_is_recorded_and_replays_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    asked = ChatRequest([{"role": "user", "content": f"act {LONE} now"}],
                        tools=[{"name": f"t{LONE}", "parameters": {}}])
    recorder = RecordingBackend("scripted", path)
    (recorded,) = recorder.complete([asked])
    recorder.close()
    assert LONE in recorded.text  # the placeholder names the user turn
    (replayed,) = ReplayBackend(path, "scripted").complete([asked])
    assert completion_to_dict(replayed) == completion_to_dict(recorded)
    assert len(path.read_bytes().splitlines()) == 1


def test_keys_of_text_with_a_lone_surrogate_are_made_and_others_unchanged() -> None:
    asked = ChatRequest([{"role": "user", "content": f"x{LONE}"}],
                        tools=[{"name": f"t{LONE}", "parameters": {}}])
    assert request_key(asked, "m") != request_key(ChatRequest(asked.messages), "m")
    assert len(legacy_request_key(asked, "m")) == 64
    plain = ChatRequest([{"role": "user", "content": "été"}], tools=[{"name": "é"}])
    assert request_key(plain, "m") == (  # the key recordings were written with
        "3c699d651ac36a6546398ca8524c85e61ee559e3c68e5bcd800ed7b11bcda044")


def test_lines_that_are_json_but_no_entry_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    good = {"key": "k", "completion": completion_to_dict(Completion("kept")), "v": 3}
    path.write_text("\n".join([
        "[1, 2]", "null", '{"key": "s", "completion": "text"}', json.dumps(good),
    ]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = RequestCache(path)
    assert cache.keys() == ["k"] and cache.get("k").text == "kept"
    skipped = [w for w in caught if "unreadable cache line" in str(w.message)]
    assert [str(w.message).split(": ")[0] for w in skipped] == [f"{path}:{n}" for n in (1, 2, 3)]


@pytest.mark.parametrize("cut", [1, 40])
def test_a_cut_last_line_resumes_without_losing_or_repeating_a_record(
        tmp_path: Path, cut: int) -> None:
    path = tmp_path / "run.jsonl"
    first = ChatRequest([{"role": "user", "content": "one"}])
    second = ChatRequest([{"role": "user", "content": "two"}])
    recorder = RecordingBackend("scripted", path)
    (one,) = recorder.complete([first])
    recorder.close()
    whole = path.read_bytes()
    path.write_bytes(whole + whole[:cut])  # a second write cut short by a crash
    with pytest.warns(RuntimeWarning, match="unreadable"):
        resumed = RecordingBackend("scripted", path)
    with pytest.warns(UserWarning, match="already holds 1 recorded"):
        again, two = resumed.complete([first, second])
    resumed.close()
    assert completion_to_dict(again) == completion_to_dict(one)
    with pytest.warns(RuntimeWarning, match="unreadable"):
        cache = RequestCache(path)
    assert len(cache) == 2 and len(path.read_bytes().splitlines()) == 3
