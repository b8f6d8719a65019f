"""Human rendering prints any message, even one a terminal cannot encode."""

from __future__ import annotations

import io

import pettingzoo
import pytest

import team_envs  # noqa: F401


@pytest.mark.parametrize(("encoding", "shown"), [("utf-8", "\\ud800 ☕"),
                                                 ("ascii", "\\ud800 \\u2615")])
def test_human_render_escapes_what_stdout_cannot_encode(monkeypatch, encoding: str,
                                                        shown: str) -> None:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)  # strict, like a real terminal
    monkeypatch.setattr("sys.stdout", stdout)
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0", render_mode="human",
                          n_agents=2)
    env.reset(seed=0)
    env.step("look \ud800 ☕ here")
    assert env.render() is None
    stdout.flush()
    assert f"look {shown} here" in stdout.buffer.getvalue().decode(encoding)
