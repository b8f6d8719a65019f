"""SimConfig: a timeout no thread can wait for is refused at make time (it used to turn every
world-model call into a fault), and ``record_path`` takes a path as ``prompts`` does."""

from __future__ import annotations

import threading
import warnings

import pytest

from agentworld_envs.backends import Backend, Completion
from agentworld_envs.registration import make
from agentworld_envs.sim.config import SimConfig

SEARCH = '{"name": "web_search", "arguments": {"queries": ["lighthouse"]}}'


class _Blocking(Backend):
    """A backend that may wait, so the simulator bounds its calls by ``timeout_s``."""

    name = "blocking"

    def complete(self, requests):
        return [Completion('<observation>{"results": []}</observation>') for _ in requests]


@pytest.mark.parametrize("timeout_s", [float("inf"), 1e30])
def test_a_timeout_no_thread_can_wait_for_is_refused(timeout_s: float) -> None:
    with pytest.raises(ValueError, match="timeout_s must be at most .*pass None to wait forever"):
        SimConfig(domain="search", backend="scripted", timeout_s=timeout_s)
    # the longest one allowed still gets answers
    env = make("search", backend=_Blocking(), timeout_s=threading.TIMEOUT_MAX)
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fault would warn
        _, _, _, _, info = env.step(SEARCH)
    assert info["observation_source"] == "world_model" and info["world_model"]["ok"]
    env.close()


def test_record_path_takes_a_path(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    env = make("search", backend="scripted", record_path=path)
    env.reset(seed=0)
    env.step(SEARCH)
    env.close()
    assert env.unwrapped.config.record_path == str(path)
    assert path.read_text().strip()  # the call was recorded there
