"""Servers on loopback for backend tests.

:func:`start_transformers_serve` runs a real ``transformers serve`` on a local model directory;
:class:`FakeOpenAIServer` is a scripted stdlib server for fault tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.examples import HANG_GUARD_S

__all__ = [
    "FakeOpenAIServer",
    "Reply",
    "chat_response",
    "free_port",
    "start_transformers_serve",
    "stop",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve_command() -> list[str]:
    exe = shutil.which("transformers") or str(Path(sys.executable).with_name("transformers"))
    return [exe, "serve"]


@contextlib.contextmanager
def start_transformers_serve(
    model_dir: str | Path, startup_timeout_s: float = HANG_GUARD_S
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Serve ``model_dir`` with ``transformers serve`` pinned to that model.

    Requests must name the model as ``str(model_dir)`` (the server answers 400 otherwise).

    Yields:
        The base URL (with ``/v1``) and the server process.

    Raises:
        RuntimeError: when the server does not answer ``/health`` within ``startup_timeout_s``;
            the message ends with the tail of its output.
    """
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    command = [*_serve_command(), str(model_dir), "--host", "127.0.0.1", "--port", str(port),
               "--device", "cpu", "--log-level", "warning"]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            _wait_healthy(f"http://127.0.0.1:{port}", process, log, startup_timeout_s)
            yield f"http://127.0.0.1:{port}/v1", process
        finally:
            stop(process, 15)


def stop(process: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM, then SIGKILL if the process is still there after ``grace_s``."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


def _wait_healthy(root: str, process: subprocess.Popen, log, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{root}/health", timeout=2).status_code == 200:
                return
        time.sleep(0.25)
    log.seek(0)
    tail = log.read().decode("utf-8", "replace")[-3000:]
    state = f"exited with code {process.returncode}" if process.poll() is not None else "timed out"
    raise RuntimeError(f"transformers serve on {root} {state} before answering /health:\n{tail}")


Responder = Callable[[int, dict[str, Any]], "Reply"]


@dataclass
class Reply:
    """What the fake server answers: a status, extra headers, and a JSON (or text, or encoded)
    body, sent after ``delay_s``, ``chunk`` bytes at a time with ``pause_s`` between chunks (a
    trickle)."""

    status: int = 200
    body: dict[str, Any] | str | bytes = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int = 0
    """Bytes per write; 0 writes the body at once."""
    pause_s: float = 0.0


def chat_response(
    content: str | None = "",
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    prompt_tokens: int = 7,
    completion_tokens: int = 3,
) -> dict[str, Any]:
    """A minimal OpenAI chat-completions response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FakeOpenAIServer:
    """A scripted OpenAI-style server on loopback (stdlib ``http.server``), for fault tests.

    ``responder(hit_number, request_json)`` decides each :class:`Reply`; hit numbers start at 1.
    It scripts what a real server does wrong: errors, delays, slow trickles, ``Retry-After`` and
    other headers, bodies that are not valid for the API; a trickle stops when the client hangs
    up. The server records every request body, its headers and arrival time, and the most
    requests in flight at once.

    Args:
        responder: Builds the reply to each POST.
    """

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.arrivals: list[float] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with fake._lock:
                    fake.bodies.append(body)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fake.arrivals.append(time.monotonic())
                    hit = len(fake.bodies)
                    fake._in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
                released = False  # counted out before its last byte goes: a client that has
                # its reply may send the next request at once, and it must not count twice
                try:
                    reply = fake.responder(hit, body)
                    time.sleep(reply.delay_s)
                    payload = reply.body if isinstance(reply.body, bytes) else (
                        reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                    ).encode("utf-8", "surrogatepass")
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    step = reply.chunk or len(payload) or 1
                    for start in range(0, len(payload), step):
                        if start + step >= len(payload):
                            with fake._lock:
                                fake._in_flight -= 1
                            released = True
                        self.wfile.write(payload[start:start + step])
                        self.wfile.flush()
                        time.sleep(reply.pause_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)
                finally:
                    if not released:
                        with fake._lock:
                            fake._in_flight -= 1

            def log_message(self, format: str, *args: Any) -> None:
                """Stay quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def hits(self) -> int:
        """How many POSTs arrived."""
        return len(self.bodies)

    @property
    def base_url(self) -> str:
        """The server's base URL, with ``/v1``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def fake_backend(base_url: str, **kwargs: Any) -> Any:
    """An ``openai`` backend for a fake server: no key, no retries, short back-off, and a
    ``timeout_s`` that is a hang guard (a loaded machine's answer is never a timeout)."""
    from agentworld_envs.backends.openai_compat import OpenAIBackend

    options: dict[str, Any] = {"api_key_env": None, "backoff_s": 0.01, "timeout_s": 60.0,
                               "max_retries": 0}
    options.update(kwargs)
    return OpenAIBackend(model="fake", base_url=base_url, **options)
