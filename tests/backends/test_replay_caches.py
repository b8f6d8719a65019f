"""The record cache serves every hit as its own copy, and never keeps a record the disk cut
short."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.backends import replay as replay_module
from agentworld_envs.backends.replay import RecordingBackend, ReplayBackend, RequestCache
from agentworld_envs.protocol.tool_calls import ToolCall


class CallingBackend(Backend):
    """Answers every request with one tool call and its token ids."""

    name = "calling"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": "caller-1"}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion('{"name": "f", "arguments": {"x": 1}}',
                           tool_calls=[ToolCall("f", {"x": 1})], raw={"token_ids": [1, 2, 3]})
                for _ in requests]


def edit(completion: Completion) -> None:
    """What a caller may do to the answer it was given."""
    completion.tool_calls[0].arguments["x"] = 99
    completion.raw["token_ids"].append(4)


def untouched(completion: Completion) -> bool:
    return (completion.tool_calls[0].arguments == {"x": 1}
            and completion.raw == {"token_ids": [1, 2, 3]})


REQUEST = ChatRequest([{"role": "user", "content": "hi"}])


def test_a_callers_edit_never_reaches_another_answer_of_the_recording(tmp_path: Path) -> None:
    recording = RecordingBackend(CallingBackend(), tmp_path / "cache.jsonl")
    first, same_batch = recording.complete([REQUEST, REQUEST])
    edit(first)
    assert untouched(same_batch)
    assert untouched(recording.complete([REQUEST])[0])  # a later hit
    recording.close()


def test_a_callers_edit_never_reaches_a_later_replay(tmp_path: Path) -> None:
    recording = RecordingBackend(CallingBackend(), tmp_path / "cache.jsonl")
    recording.complete([REQUEST])
    recording.close()
    replay = ReplayBackend(tmp_path / "cache.jsonl", "caller-1")
    edit(replay.complete([REQUEST])[0])
    assert untouched(replay.complete([REQUEST])[0])


def test_the_kept_record_is_the_lines_not_the_callers_objects(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "cache.jsonl")
    completion = CallingBackend().complete([REQUEST])[0]
    cache.put("k", completion)
    edit(completion)  # the caller's own answer, edited after it was recorded
    assert untouched(cache.get("k"))
    assert cache.get("k") == RequestCache(tmp_path / "cache.jsonl").get("k")


def test_a_record_the_disk_cut_short_is_an_error_and_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = RequestCache(tmp_path / "cache.jsonl")
    write = os.write
    # a full disk: write() takes part of the line and returns its short count, raising nothing
    monkeypatch.setattr(replay_module.os, "write", lambda fd, data: write(fd, data[:10]))
    with pytest.raises(OSError, match="cut short"):
        cache.put("cut", Completion("lost"))
    assert "cut" not in cache
    monkeypatch.setattr(replay_module.os, "write", write)
    cache.put("next", Completion("kept"))
    with pytest.warns(RuntimeWarning, match="unreadable cache line"):
        reloaded = RequestCache(tmp_path / "cache.jsonl")
    assert reloaded.keys() == ["next"] and reloaded.get("next").text == "kept"
