"""``agentworld serve`` on loopback for tests: a real server, reached by OpenEnv's client."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator

import httpx

from tests.helpers.examples import HANG_GUARD_S, ROOT
from tests.helpers.server import stop

__all__ = ["serve", "stats"]

_READY = "agentworld serve: ready at "


def _command() -> list[str]:
    """``agentworld serve`` of this checkout under the tests' own interpreter: an installed
    ``agentworld`` script may belong to another interpreter or checkout."""
    return [sys.executable, "-m", "agentworld_envs.cli", "serve"]


@contextlib.contextmanager
def serve(env_id: str, *args: str, startup_timeout_s: float = HANG_GUARD_S) -> Iterator[
        tuple[str, subprocess.Popen]]:
    """Run ``agentworld serve ENV_ID ARGS`` on a loopback port the server picks (``--port
    0``: a port picked here and freed for it could be taken first) until the block ends.

    Yields:
        The base URL and the process (SIGTERM, then SIGKILL after 30 s, at the end).

    Raises:
        RuntimeError: with the server's output, when it exits (or is not ready within the
            generous ``startup_timeout_s``) before printing its ready line.
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([*_command(), env_id, "--port", "0", *args],
                                   stdout=log, stderr=subprocess.PIPE, env=env, text=True)
        ready = threading.Event()
        lines: list[str] = []
        url: list[str] = []

        def read() -> None:
            for line in process.stderr:
                lines.append(line)
                if line.startswith(_READY):
                    url.append(line.removeprefix(_READY).split()[0])
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        try:
            while not ready.wait(0.2):
                if process.poll() is not None or startup_timeout_s <= 0:
                    raise RuntimeError(f"agentworld serve {env_id} stopped before it was ready "
                                       f"(code {process.poll()}):\n{''.join(lines)[-3000:]}")
                startup_timeout_s -= 0.2
            yield url[0], process
        finally:
            stop(process, 30)


def stats(url: str) -> dict:
    """The server's ``/agentworld/stats``."""
    return httpx.get(f"{url}/agentworld/stats", timeout=30).json()
