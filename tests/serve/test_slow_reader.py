"""A WebSocket client that sends but never reads its replies has its session closed and freed
once a reply waits longer than ``send_timeout_s``, also with no idle timeout, and its socket is
closed: before, the server's coroutine waited on the full socket for as long as the client
stayed, holding the session's slot."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("openenv")

from agentworld_envs.cli import main  # noqa: E402
from agentworld_envs.serve.settings import ServeSettings  # noqa: E402
from tests.helpers.openenv_server import stats  # noqa: E402
from tests.serve.test_serve import _in_process, _wait  # noqa: E402

LIST_TOOLS = json.dumps({"type": "step", "data": {"type": "list_tools"}}).encode()


def _frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """A masked frame (text by default), as a client sends it."""
    mask = os.urandom(4)
    assert len(payload) < 126
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(
        byte ^ mask[i % 4] for i, byte in enumerate(payload))


def _server_frames(sock: socket.socket) -> Iterator[tuple[int, bytes]]:
    """The server's frames, (opcode, payload), until it closes the socket."""
    stream = sock.makefile("rb")
    while len(header := stream.read(2)) == 2:
        length = header[1] & 0x7F
        if length >= 126:
            length = int.from_bytes(stream.read(2 if length == 126 else 8), "big")
        yield header[0] & 0x0F, stream.read(length)


def _open(url: str) -> socket.socket:
    """A WebSocket to ``url``'s ``/ws`` on a raw socket with small buffers."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sock.settimeout(600)
    sock.connect(("127.0.0.1", int(url.rsplit(":", 1)[1])))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(f"GET /ws HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\nConnection: Upgrade"
                 f"\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 101 ")
    return sock


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def app_log():
    """The server's warnings (uvicorn's logging set-up leaves pytest's caplog out)."""
    logger, kept = logging.getLogger("agentworld_envs.serve.app"), _Kept()
    logger.addHandler(kept)
    yield kept.messages
    logger.removeHandler(kept)


def test_a_client_that_stops_reading_is_closed_and_its_session_freed(app_log):
    with _in_process("AgentFloor/B3-v0", idle_timeout_s=None, send_timeout_s=0.2) as url, \
            contextlib.closing(_open(url)) as sock:
        sock.sendall(_frame(json.dumps({"type": "reset", "data": {"seed": 0}}).encode()))
        sock.setblocking(False)
        unsent = bytearray()

        def pushed_until_closed() -> bool:
            """Send steps while the server reads them (whole frames, however the socket
            splits them); whether the session has closed."""
            with contextlib.suppress(BlockingIOError):
                while True:
                    unsent.extend(b"" if unsent else _frame(LIST_TOOLS))
                    del unsent[:sock.send(unsent)]
            return stats(url)["sessions_closed"] == 1

        _wait(pushed_until_closed, "the session closed", 120)
        assert stats(url)["capacity"]["active_sessions"] == 0
        assert any(message.endswith("closed: the client took no reply for 0.2 s (it stopped "
                                    "reading)") for message in app_log), app_log
        # the server closed the socket: once the client reads, it gets the replies it left, then
        # the close frame if it came within the timeout, then the end of the stream
        sock.setblocking(True)
        sock.settimeout(600)
        closing = []
        with contextlib.suppress(ConnectionResetError):  # closed with the client's frames unread
            for opcode, payload in _server_frames(sock):
                if opcode == 0x8:
                    closing.append(payload)
                    sock.sendall(unsent + _frame(payload[:2], opcode=0x8))  # its echo
        assert closing in ([], [b"\x03\xf0the client took no reply for 0.2 s (it stopped "
                                b"reading)"])  # 1008: policy violation


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan")])
def test_the_send_timeout_is_a_finite_positive_number(value, capsys):
    with pytest.raises(ValueError, match="^send_timeout_s must be a finite number > 0"):
        ServeSettings(env_id="AgentFloor/B3-v0", send_timeout_s=value)
    assert main(["serve", "AgentFloor/B3-v0", "--send-timeout", str(value)]) == 2
    assert "send_timeout_s must be a finite number > 0" in capsys.readouterr().err
