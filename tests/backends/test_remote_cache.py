"""A request cache keeps every whole line of several writers, and records no answer its caller
never got."""

from __future__ import annotations

import pytest

from agentworld_envs.backends import BackendError, ChatRequest
from agentworld_envs.backends.replay import ReplayBackend, RequestCache
from agentworld_envs.protocol.chat import Completion
from agentworld_envs.sim.model_client import ModelClient
from tests.helpers.examples import HANG_GUARD_S


def test_a_writer_that_crashed_mid_line_costs_no_other_writers_record(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    first = RequestCache(path)
    first.put("k1", Completion(text="one"))
    second = RequestCache(path)  # another process sharing the file, opened before the crash
    with open(path, "ab") as crashed:  # a third writer dies in the middle of its line
        crashed.write(b'{"key": "k3", "completion": {"te')
    second.put("k4", Completion(text="four"))
    first.put("k5", Completion(text="five"))
    first.close()
    second.close()
    with pytest.warns(RuntimeWarning, match=r"calls.jsonl:2: skipping an unreadable cache line"):
        reloaded = RequestCache(path)
    assert sorted(reloaded.keys()) == ["k1", "k4", "k5"]  # k4 was glued to the cut line, lost
    assert reloaded.get("k4").text == "four"


def test_an_answer_that_comes_after_its_call_timed_out_is_never_recorded(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    slow = {"name": "scripted", "rules": [{"match": "slow", "delay_s": 0.6, "reply": "late"}]}
    client = ModelClient(slow, record_path=str(path), timeout_s=0.2)
    request = ChatRequest([{"role": "user", "content": "slow"}])
    try:
        (fault,) = client.complete([request])
        assert fault.kind == "timeout"
        assert client._worker._idle.wait(HANG_GUARD_S)  # the abandoned call has returned
    finally:
        client.close()
    (replayed,) = ReplayBackend(path, "scripted").complete_each([request])
    assert isinstance(replayed, BackendError)  # as the run saw it; was the late "late"
    assert "no recorded completion" in str(replayed)
