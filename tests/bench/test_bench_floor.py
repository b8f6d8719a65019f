"""Speed of an AgentFloor env against the JSON floor (pytest-benchmark; timing is never asserted).

The floor is what any text env must at least pay per turn: ``json.loads`` of the action and
``json.dumps`` of the observation payload. Each env benchmark runs right after its floor, under
the same set-up, and stores ``ratio_to_json_floor`` (median over median) in
``benchmark.extra_info``; the ratio table is written to the terminal when the module finishes:

* ``step``: the first step of an episode, a reset before each (the floor too: a reset evicts
  the caches, which costs the JSON work after it about 40%);
* ``warm_step``: a step in the middle of an episode, after another step (the floor in a loop);
* ``reset``: against serialising the prompt and the info dict.

Run with::

    python -m pytest tests/bench -m benchmark --benchmark-only -p no:cacheprovider -o addopts=""
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import floor_tasks  # noqa: F401 - registers the AgentFloor ids

ACTION = '{"name": "lookup_record", "arguments": {"record_id": "P104"}}'
ENV_ID = "AgentFloor/A1-v0"
RESET_OPTIONS = {"variant": "v0"}
MEDIANS: dict[str, float] = {}
"""Median seconds per benchmark, filled as the benchmarks run."""
PAIRS = {"step": "step_json_floor", "warm_step": "warm_step_json_floor",
         "reset": "reset_json_floor"}

pytestmark = pytest.mark.benchmark


def _median(benchmark: Any) -> float | None:
    stats = getattr(benchmark, "stats", None)
    return stats.stats.median if stats is not None else None


def _record(benchmark: Any, name: str) -> None:
    """Keep this benchmark's median; for an env benchmark, store and print its floor ratio."""
    median = _median(benchmark)
    if median is None:  # --benchmark-disable
        return
    MEDIANS[name] = median
    benchmark.extra_info["median_us"] = round(median * 1e6, 2)
    floor = MEDIANS.get(PAIRS.get(name, ""))
    if floor:
        benchmark.extra_info["ratio_to_json_floor"] = round(median / floor, 2)
        print(f"{name}: {median * 1e6:.1f} us = {median / floor:.1f}x the JSON floor")


@pytest.fixture(scope="module", autouse=True)
def ratio_table(request: pytest.FixtureRequest) -> Iterator[None]:
    """Write the env/floor ratio table to the terminal once the module's benchmarks are done."""
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    rows = [(env, floor) for env, floor in PAIRS.items() if env in MEDIANS and floor in MEDIANS]
    if reporter is None or capture is None or not rows:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(f"{'AgentFloor A1':<13} {'env us':>10} {'floor us':>10} {'ratio':>7}")
        for env, floor in rows:
            env_s, floor_s = MEDIANS[env], MEDIANS[floor]
            reporter.write_line(
                f"{env:<13} {env_s * 1e6:>10.1f} {floor_s * 1e6:>10.1f} {env_s / floor_s:>6.1f}x")


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


def _json_floor(payload: dict[str, Any]) -> str:
    """What any text env pays per turn: parse the action, serialise the observation."""
    json.loads(ACTION)
    return json.dumps(payload, ensure_ascii=False)


def test_step_json_floor(benchmark: Any, env: gym.Env, step_payload: dict[str, Any]) -> None:
    """Floor of a first step: the JSON work, after the same reset as the step's."""

    def setup() -> tuple[tuple, dict]:
        env.reset(seed=0, options=RESET_OPTIONS)
        return (step_payload,), {}

    benchmark.pedantic(_json_floor, setup=setup, rounds=3000, warmup_rounds=100, iterations=1)
    _record(benchmark, "step_json_floor")


def test_step(benchmark: Any, env: gym.Env) -> None:
    """One lookup_record step on a freshly reset env (the reset is set-up, not timed)."""

    def setup() -> tuple[tuple, dict]:
        env.reset(seed=0, options=RESET_OPTIONS)
        return (), {}

    result = benchmark.pedantic(lambda: env.step(ACTION), setup=setup, rounds=3000,
                                warmup_rounds=100, iterations=1)
    assert '"status": "ok"' in result[0]
    _record(benchmark, "step")


def test_warm_step_json_floor(benchmark: Any, step_payload: dict[str, Any]) -> None:
    """Floor of a step in the middle of an episode: the JSON work, in a loop."""
    benchmark.pedantic(_json_floor, args=(step_payload,), rounds=3000, warmup_rounds=100,
                       iterations=1)
    _record(benchmark, "warm_step_json_floor")


def test_warm_step(benchmark: Any) -> None:
    """One lookup_record step after other steps of the same (long) episode."""
    long = gym.make(ENV_ID, max_episode_steps=10**6)
    long.reset(seed=0, options=RESET_OPTIONS)
    result = benchmark.pedantic(lambda: long.step(ACTION), rounds=3000, warmup_rounds=100,
                                iterations=1)
    assert '"status": "ok"' in result[0] and not result[2] and not result[3]
    _record(benchmark, "warm_step")
    long.close()


def test_reset_json_floor(benchmark: Any, env: gym.Env) -> None:
    """Floor of a reset: serialise the prompt and the info dict."""
    prompt, info = env.reset(seed=0, options=RESET_OPTIONS)
    benchmark.pedantic(lambda: json.dumps([prompt, info], ensure_ascii=False), rounds=3000,
                       warmup_rounds=100, iterations=1)
    _record(benchmark, "reset_json_floor")


def test_reset(benchmark: Any, env: gym.Env) -> None:
    """One reset (fresh fixture database, toolkit and trace)."""
    prompt, _ = benchmark.pedantic(lambda: env.reset(seed=0, options=RESET_OPTIONS),
                                   rounds=3000, warmup_rounds=100, iterations=1)
    assert prompt
    _record(benchmark, "reset")
