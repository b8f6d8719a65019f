"""A session the idle sweep closed answers every later message with the reason, ``state`` too."""

from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("openenv")

from agentworld_envs.serve import app  # noqa: E402
from tests.helpers.openenv_server import stats  # noqa: E402
from tests.serve.test_serve import _ask, _in_process, _wait, _ws  # noqa: E402


@pytest.fixture
def sweep_released(monkeypatch) -> threading.Event:
    """The idle sweep finds no session idle until the event is set: on a loaded machine the
    reset may come more than the short idle timeout after the connection opened."""
    released, idle = threading.Event(), app._idle
    monkeypatch.setattr(app, "_idle",
                        lambda session, limit: released.is_set() and idle(session, limit))
    return released


def test_state_of_a_session_closed_for_idling_is_an_error(sweep_released):
    with _in_process("AgentFloor/B3-v0", idle_timeout_s=0.2) as url:
        with _ws(url) as ws:
            assert _ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            sweep_released.set()
            _wait(lambda: stats(url)["sessions_closed"] >= 1, "the idle session closed")
            # before, a live-looking state (done false) came back from the closed session
            for message in ({"type": "state"}, {"type": "step", "data": {"message": "hi"}}):
                reply = _ask(ws, message)
                assert reply["type"] == "error", reply
                assert "idle" in reply["data"]["message"]
                assert "open a new session" in reply["data"]["message"]


def test_an_error_reply_shows_a_clients_huge_value_shortened():
    """A megabyte of bad seed, option name, task or message type came back whole in the error
    reply."""
    huge = "x" * 1_000_000
    with _in_process("AgentFloor/all") as url, _ws(url) as ws:
        for message in ({"type": "reset", "data": {"seed": huge}},
                        {"type": "reset", "data": {"options": {huge: 1}}},
                        {"type": "reset", "data": {"options": {"task": huge}}},
                        {"type": huge}):
            reply = _ask(ws, message)
            assert reply["type"] == "error" and len(json.dumps(reply)) < 2_000, \
                json.dumps(reply)[:300]
        assert _ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
