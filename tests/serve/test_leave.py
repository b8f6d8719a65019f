"""A client that leaves in the middle of a step frees its session at once, also after sending
more frames, and frames sent during a step are answered in order after it."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("openenv")

from agentworld_envs.serve.app import READ_AHEAD  # noqa: E402
from agentworld_envs.serve.session import GymSession  # noqa: E402
from tests.helpers.examples import HANG_GUARD_S  # noqa: E402
from tests.helpers.openenv_server import stats  # noqa: E402
from tests.serve.test_serve import _ask, _in_process, _wait, _ws  # noqa: E402

CALL = {"type": "step", "data": {"type": "call_tool", "tool_name": "lookup_record",
                                 "arguments": {"record_id": "PKG-88"}}}
"""A step that runs in the session's thread, where the test holds it."""


@pytest.fixture
def held_step(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """A ``call_tool`` step held in the session's thread: ``started`` is set once it runs, and
    it goes on once the test sets ``release``."""
    started, release = threading.Event(), threading.Event()
    step = GymSession._step

    def held(self, action, /):
        if action.type == "call_tool":
            started.set()
            release.wait(HANG_GUARD_S)
        return step(self, action)

    monkeypatch.setattr(GymSession, "_step", held)
    return started, release


@pytest.mark.parametrize("sent", [[],
                                  [{"type": "close"}],  # what OpenEnv's client.close() sends
                                  [{"type": "state"}] * READ_AHEAD])
def test_a_client_leaving_mid_step_frees_its_session_at_once(held_step, sent):
    started, release = held_step
    with _in_process("AgentFloor/B3-v0", max_sessions=1) as url:
        try:
            with _ws(url) as ws:
                _ask(ws, {"type": "reset", "data": {"options": {"variant": "v0"}}})
                ws.send(json.dumps(CALL))
                assert started.wait(HANG_GUARD_S)
                for message in sent:
                    ws.send(json.dumps(message))
            # the step is held until the end: before, the slot stayed taken for all of it
            _wait(lambda: stats(url)["capacity"]["active_sessions"] == 0,
                  "the session its client left freed while its step runs", limit_s=120)
            assert stats(url)["running"] == 1
            with _ws(url) as other:
                reply = _ask(other, {"type": "reset", "data": {"options": {"variant": "v0"}}})
                assert reply["type"] == "observation", reply["data"]
        finally:
            release.set()
        _wait(lambda: (stats(url)["running"], stats(url)["sessions_closed"]) == (0, 2),
              "the left step ended and both sessions closed")


def test_frames_sent_during_a_step_are_answered_in_order_after_it(held_step):
    started, release = held_step
    with _in_process("AgentFloor/B3-v0") as url, _ws(url) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"variant": "v0"}}})
        ws.send(json.dumps(CALL))
        assert started.wait(HANG_GUARD_S)
        pipelined = [{"type": "state"}, {"type": "step", "data": {"type": "list_tools"}},
                     {"type": "nope"}] * (2 * READ_AHEAD)  # more than are read ahead
        for message in pipelined:
            ws.send(json.dumps(message))
        release.set()
        replies = [json.loads(ws.recv(timeout=600)) for _ in range(1 + len(pipelined))]
        assert replies[0]["type"] == "observation"
        assert [reply["type"] for reply in replies[1:4]] == ["state", "observation", "error"]
        assert [reply["type"] for reply in replies[1:]] == [
            reply["type"] for reply in replies[1:4]] * (2 * READ_AHEAD)
        assert replies[1]["data"]["step_count"] == 1
