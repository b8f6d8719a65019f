"""``openenv_trl.py`` starts its own ``agentworld serve`` on a port the server picks and names,
so a port that another process holds cannot stop it."""

from __future__ import annotations

import socket
import urllib.request
from types import SimpleNamespace

import pytest

from tests.helpers.examples import load_example

pytest.importorskip("uvicorn", reason="agentworld serve needs the serve extra")


def test_the_served_env_answers_when_a_port_picked_beforehand_is_taken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the script bound port 0, freed the port and passed it to the server: a port
    taken in between (here: held by this test) left ``RuntimeError: agentworld serve exited
    with code 1``. Now the server binds port 0 and its ready line says where."""
    example = load_example("openenv_trl", monkeypatch)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]

        class Probe:  # what a bind to port 0 would have answered: the held port
            def __enter__(self) -> Probe:
                return self

            def __exit__(self, *_: object) -> None:
                return None

            def bind(self, _address: object) -> None:
                return None

            def getsockname(self) -> tuple[str, int]:
                return "127.0.0.1", taken

        monkeypatch.setattr(example, "socket", SimpleNamespace(socket=Probe), raising=False)
        with example.served("A1") as url:
            assert url.startswith("http://127.0.0.1:") and not url.endswith(f":{taken}")
            with urllib.request.urlopen(f"{url}/health", timeout=30) as answer:
                assert answer.status == 200
