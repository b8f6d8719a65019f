"""Speed of an AgentFloor env against the JSON floor (pytest-benchmark; timing is never asserted).

The floor is what any text env must at least pay per turn: ``json.loads`` of the action and
``json.dumps`` of the observation payload. Each benchmark times the env and its floor under the
same set-up, in alternating blocks of calls (the machines are shared and their speed drifts, so
two medians taken a minute apart are not comparable), and stores ``ratio_to_json_floor`` (median
over median) in ``benchmark.extra_info``; the line is also written to the terminal:

* ``step``: the first step of an episode, a reset before each call (the floor's too: a reset
  evicts the caches, which slows the JSON work after it by about 40%);
* ``warm_step``: a step in the middle of an episode, after another step (the floor in a loop);
* ``reset``: against serialising the prompt and the info dict.

Run with::

    python -m pytest tests/bench -m benchmark --benchmark-only -p no:cacheprovider -o addopts=""
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import floor_tasks  # noqa: F401 - registers the AgentFloor ids

ACTION = '{"name": "lookup_record", "arguments": {"record_id": "P104"}}'
ENV_ID = "AgentFloor/A1-v0"
RESET_OPTIONS = {"variant": "v0"}

pytestmark = pytest.mark.benchmark

Case = tuple[Callable[[], Any], Callable[[], Any]]
"""A set-up (not timed) and the call timed after it."""


def _nothing() -> None:
    return None


def _alternating_medians(cases: dict[str, Case], blocks: int = 20,
                         calls: int = 100) -> dict[str, float]:
    """Median seconds per call of each case, the cases timed in turns of ``calls`` calls."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(blocks):
        for name, (setup, call) in cases.items():
            for _ in range(calls):
                setup()
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def _report(benchmark: Any, name: str, cases: dict[str, Case]) -> None:
    """Time ``cases`` (the env's, then its floor's) alternately; store and print the ratio."""
    env_s, floor_s = _alternating_medians(cases).values()
    benchmark.extra_info.update(median_us=round(env_s * 1e6, 2),
                                json_floor_us=round(floor_s * 1e6, 2),
                                ratio_to_json_floor=round(env_s / floor_s, 2))
    print(f"{name}: {env_s * 1e6:.1f} us = {env_s / floor_s:.1f}x the JSON floor "
          f"({floor_s * 1e6:.1f} us, timed alternately)")


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    """The A1 env as users make it, already through its first (checked) step."""
    made = gym.make(ENV_ID)
    made.reset(seed=0, options=RESET_OPTIONS)
    made.step(ACTION)
    yield made
    made.close()


@pytest.fixture(scope="module")
def step_payload(env: gym.Env) -> dict[str, Any]:
    """The envelope that one lookup step returns, as a Python object."""
    env.reset(seed=0, options=RESET_OPTIONS)
    return json.loads(env.step(ACTION)[0])


def _json_floor(payload: dict[str, Any]) -> Callable[[], str]:
    def floor() -> str:
        json.loads(ACTION)
        return json.dumps(payload, ensure_ascii=False)
    return floor


def test_step(benchmark: Any, env: gym.Env, step_payload: dict[str, Any]) -> None:
    """One lookup_record step on a freshly reset env (the reset is set-up, not timed)."""

    def reset() -> tuple[tuple, dict]:
        env.reset(seed=0, options=RESET_OPTIONS)
        return (), {}

    result = benchmark.pedantic(lambda: env.step(ACTION), setup=reset, rounds=1000,
                                warmup_rounds=100, iterations=1)
    assert '"status": "ok"' in result[0]
    _report(benchmark, "step", {"step": (reset, lambda: env.step(ACTION)),
                                "floor": (reset, _json_floor(step_payload))})


def test_warm_step(benchmark: Any, step_payload: dict[str, Any]) -> None:
    """One lookup_record step after other steps of the same (long) episode."""
    long = gym.make(ENV_ID, max_episode_steps=10**6)
    long.reset(seed=0, options=RESET_OPTIONS)
    result = benchmark.pedantic(lambda: long.step(ACTION), rounds=1000, warmup_rounds=100,
                                iterations=1)
    assert '"status": "ok"' in result[0] and not result[2] and not result[3]
    _report(benchmark, "warm_step", {"warm_step": (_nothing, lambda: long.step(ACTION)),
                                     "floor": (_nothing, _json_floor(step_payload))})
    long.close()


def test_reset(benchmark: Any, env: gym.Env) -> None:
    """One reset (fresh fixture database, toolkit and trace) against serialising its output."""
    prompt, info = env.reset(seed=0, options=RESET_OPTIONS)
    result = benchmark.pedantic(lambda: env.reset(seed=0, options=RESET_OPTIONS), rounds=1000,
                                warmup_rounds=100, iterations=1)
    assert result[0] == prompt
    _report(benchmark, "reset", {
        "reset": (_nothing, lambda: env.reset(seed=0, options=RESET_OPTIONS)),
        "floor": (_nothing, lambda: json.dumps([prompt, info], ensure_ascii=False))})
