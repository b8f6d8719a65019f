"""A client that leaves while its step waits on the world model stops that model call at once,
freeing the model, and its own call alone: another session's call on the shared model goes on
and is answered by the model."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

import pytest

pytest.importorskip("openenv")

from agentworld_envs.backends import Backend, ChatRequest, Completion, register_backend  # noqa: E402
from agentworld_envs.backends.cancelling import (  # noqa: E402
    CallCancelled,
    current_scope,
    stopped_with,
)
from tests.helpers.openenv_server import stats  # noqa: E402
from tests.serve.test_serve import _ask, _in_process, _wait, _ws  # noqa: E402

GUARD_S = 60.0
"""Hang guard only: in a passing run every wait below is ended by an event."""
BACKEND = "serve4_held"


class _Held(Backend):
    """A world model whose every call waits until its caller's scope cancels it (it then
    raises) or the test releases it (it then answers "ok"); it records how each call ended."""

    name = BACKEND
    cancels_each_call = True

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.ended: list[str] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        stop = threading.Event()
        with stopped_with(current_scope(), stop.set):
            self.entered.set()
            while not (stop.wait(0.01) or self.release.wait(0.01)):
                pass
        self.ended.append("cancelled" if stop.is_set() else "released")
        if stop.is_set():
            raise CallCancelled.by_caller()
        return [Completion(text="<predicted_observation>ok</predicted_observation>")
                for _ in requests]


BUILT: list[_Held] = []
register_backend(BACKEND, lambda: BUILT.append(_Held()) or BUILT[-1])


def _search(query: str) -> dict:
    return {"type": "step", "data": {"message": json.dumps(
        {"name": "web_search", "arguments": {"queries": [query]}})}}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the departed step's fallback warning
def test_a_client_leaving_mid_model_call_cancels_that_call():
    with _in_process("AgentWorld/Search-v0", backend=BACKEND) as url:
        held = BUILT[-1]
        try:
            with _ws(url) as ws:
                _ask(ws, {"type": "reset", "data": {"seed": 0}})
                ws.send(json.dumps(_search("alpha")))
                assert held.entered.wait(GUARD_S)
            # before, the call held the model until it ended on its own (its timeout_s)
            _wait(lambda: held.ended == ["cancelled"], "the left call was cancelled", GUARD_S)
            _wait(lambda: stats(url)["running"] == 0, "the left step ended", GUARD_S)
            assert stats(url)["capacity"]["active_sessions"] == 0
        finally:
            held.release.set()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_another_sessions_call_on_the_shared_model_goes_on():
    with _in_process("AgentWorld/Search-v0", backend=BACKEND) as url:
        held = BUILT[-1]
        try:
            with _ws(url) as staying:
                with _ws(url) as leaving:
                    _ask(leaving, {"type": "reset", "data": {"seed": 0}})
                    _ask(staying, {"type": "reset", "data": {"seed": 1}})
                    leaving.send(json.dumps(_search("alpha")))
                    staying.send(json.dumps(_search("beta")))
                    _wait(lambda: stats(url)["running"] == 2 and held.entered.is_set(),
                          "both steps wait on the model", GUARD_S)
                _wait(lambda: stats(url)["running"] == 1,
                      "the left step ended while the other still waits", GUARD_S)
                held.release.set()
                reply = json.loads(staying.recv(timeout=GUARD_S))
        finally:
            held.release.set()
    observation = reply["data"]["observation"]
    assert observation["text"] == "ok"
    assert observation["metadata"]["info"]["observation_source"] == "world_model"
    assert "released" in held.ended
