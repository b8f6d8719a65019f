"""An error reply quoting a client's huge value is cut to a readable size, whether the server or
the env wrote it: a megabyte of reset argument name or of variant came back whole, over the
WebSocket and over HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

pytest.importorskip("openenv")

from tests.serve.test_serve import _ask, _in_process, _ws  # noqa: E402

HUGE = "x" * 1_000_000


def test_an_error_quoting_a_huge_value_is_cut_and_keeps_its_cause_and_hint():
    with _in_process("AgentFloor/all") as url:
        refused = (({HUGE: 1}, "unknown reset argument(s)", "options"),
                   ({"options": {"task": "B3", "variant": HUGE}}, "task B3 has no variant",
                    "it has ['v0'"))
        with _ws(url) as ws:
            for data, cause, hint in refused:
                reply = _ask(ws, {"type": "reset", "data": data})
                message = reply["data"]["message"]
                assert reply["type"] == "error" and len(json.dumps(reply)) < 2_000, message[:200]
                assert message.startswith(cause) and hint in message[-300:], message
            assert _ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        for data, cause, hint in refused:
            answer = httpx.post(f"{url}/reset", json=data, timeout=600)
            detail = answer.json()["detail"]
            assert answer.status_code == 400 and len(answer.text) < 2_000, detail[:200]
            assert detail.startswith(cause) and hint in detail[-300:], detail
