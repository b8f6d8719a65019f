"""``openenv_trl.py``'s own ``agentworld serve`` that exits before it is ready is an error that
says why, in the server's own words."""

from __future__ import annotations

import pytest

from tests.helpers.examples import load_example

pytest.importorskip("uvicorn", reason="agentworld serve needs the serve extra")


def test_a_server_that_exits_at_start_is_reported_with_its_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the server's stderr was read and dropped: ``agentworld serve exited with code
    2``, and nothing of why."""
    example = load_example("openenv_trl", monkeypatch)
    with pytest.raises(RuntimeError, match=r"^agentworld serve exited with code 2: agentworld: "
                                           r"error: 'AgentFloor/NOPE-v0' is not an env this "
                                           r"server can serve"):
        with example.served("NOPE"):
            pass
