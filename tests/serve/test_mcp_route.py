"""``POST /mcp`` on ``agentworld serve``: no HTTP MCP session, so none holds a slot."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("openenv")

from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from tests.serve.test_serve import _ask, _in_process, _ws  # noqa: E402


def _rpc(url: str, method: str, **params) -> dict:
    return httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method,
                                          "params": params}, timeout=600).json()


def test_an_http_mcp_session_is_refused_and_holds_no_slot():
    with _in_process("AgentFloor/B3-v0", max_sessions=1) as url:
        for _ in range(3):  # before, the first took the only slot until the idle sweep
            answer = _rpc(url, "openenv/session/create")
            assert answer["id"] == 7 and answer["error"]["code"] == -32601
            assert "openenv/session/create" in answer["error"]["message"]
            assert "/ws" in answer["error"]["message"]
        assert httpx.get(f"{url}/agentworld/stats", timeout=600).json()["capacity"][
            "active_sessions"] == 0
        with _ws(url) as ws:  # the one slot is free for a WebSocket session
            assert _ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        # every other request is still OpenEnv's to answer
        assert _rpc(url, "tools/list")["error"]["message"] == "Environment does not support MCP"
        parse_error = httpx.post(f"{url}/mcp", content=b"{not json", timeout=600).json()
        assert parse_error["error"]["code"] == -32700


def test_openenvs_mcp_client_is_told_why_it_gets_no_session():
    with _in_process("AgentFloor/B3-v0", max_sessions=1) as url:
        client = MCPToolClient(base_url=url, message_timeout_s=600).sync()
        with pytest.raises(RuntimeError, match="opens no HTTP MCP session"):
            client.connect()
        assert httpx.get(f"{url}/agentworld/stats", timeout=600).json()["capacity"][
            "active_sessions"] == 0
