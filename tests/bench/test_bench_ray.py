"""What Ray actors cost and give: RayVectorEnv against the in-process vector env, in one run.

On a real local Ray runtime (2 CPUs), each comparison times the two sides alternately, round by
round (these machines' speed drifts), and reports the ratio of their medians to
``benchmark.extra_info`` and the terminal; timing is never asserted.

* ``free``: seconds per step of 1,024 ``AgentWorld/Search-v0`` sub-envs on the ``scripted``
  backend (no model: what remains is the envs' own work and, for Ray, the fan-out, the
  transfers and the gathering), in-process, in 1 actor and in 2 actors of 512 (goal: 2 actors
  at most 2x the in-process time; 1 actor against in-process is Ray's own cost).
* ``hf``: a step of 16 sub-envs on the tiny ``hf`` model (64 new tokens each), one in-process
  batch of 16 against 2 actors of 8, each with its own copy of the model (goal: at least 0.8 of
  the in-process throughput).

Run with::

    python -m pytest tests/bench/test_bench_ray.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.distributed import RayVectorEnv
from tests.bench.test_bench_sim import (
    ACTION,
    ENV_ID,
    LONG_EPISODE,
    SEARCH_ACTION,
    SEARCH_ID,
    SETTINGS,
)
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

pytestmark = [pytest.mark.benchmark, pytest.mark.usefixtures("ray_runtime")]

WIDE = 1024
NARROW = 16
FREE = {"backend": "scripted", "max_episode_steps": LONG_EPISODE,
        "scenarios": ["search-lighthouse-keeper"]}
STEPS_PER_ROUND = 2


def _stepper(envs: Any, action: str, steps: int) -> Callable[[], float]:
    """Time ``steps`` steps of ``envs``, every sub-env taking ``action``; seconds per step."""
    actions = [action] * envs.num_envs

    def timed() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            envs.step(actions)
        return (time.perf_counter() - start) / steps
    return timed


def _alternate(benchmark: Any, sides: list[Callable[[], float]], rounds: int) -> list[float]:
    """Median seconds per step of each side, the sides timed one after the other per round."""
    times: list[list[float]] = [[] for _ in sides]

    def one_round() -> None:
        for side, timed in zip(sides, times, strict=True):
            timed.append(side())
    for side in sides:  # warm-up: first steps, actors' imports, model loads
        side()
    benchmark.pedantic(one_round, rounds=rounds)
    return [statistics.median(timed) for timed in times]


def _report(benchmark: Any, name: str, value: float, text: str) -> None:
    benchmark.extra_info[name] = round(value, 3)
    if text:
        print(f"\n[ray] {text}")


def _reset(*envs: Any) -> None:
    for each in envs:
        each.reset(seed=0)


def test_overhead_on_a_free_backend(benchmark: Any) -> None:
    local = gym.make_vec(SEARCH_ID, num_envs=WIDE, **FREE)
    one, two = (RayVectorEnv(SEARCH_ID, WIDE, num_actors=n, **FREE) for n in (1, 2))
    try:
        _reset(local, one, two)
        local_s, one_s, two_s = _alternate(benchmark, [
            _stepper(envs, SEARCH_ACTION, STEPS_PER_ROUND) for envs in (local, one, two)],
            rounds=5)
    finally:
        for envs in (two, one, local):
            envs.close()
    per_env_us = [s / WIDE * 1e6 for s in (local_s, one_s, two_s)]
    _report(benchmark, "two_actors_over_in_process", two_s / local_s,
            f"{WIDE} envs, free backend, us per env-step: in-process {per_env_us[0]:.0f}, "
            f"1 actor {per_env_us[1]:.0f}, 2 actors {per_env_us[2]:.0f}; 2 actors / in-process "
            f"{two_s / local_s:.2f}x, 1 actor / in-process {one_s / local_s:.2f}x")
    _report(benchmark, "one_actor_over_in_process", one_s / local_s, "")
    _report(benchmark, "two_actors_over_one_throughput", one_s / two_s,
            f"throughput, 2 actors / 1 actor: {one_s / two_s:.2f}x")


def test_throughput_on_a_tiny_hf_model(benchmark: Any, tiny_lm_dir: Path) -> None:
    backend = {"name": "hf", "model": str(tiny_lm_dir), "device": "cpu", "dtype": "auto",
               "batch_size": NARROW}
    local = gym.make_vec(ENV_ID, num_envs=NARROW, backend=backend, **SETTINGS)
    remote = RayVectorEnv(ENV_ID, NARROW, num_actors=2, backend=backend, **SETTINGS)
    try:
        _reset(local, remote)
        local_s, ray_s = _alternate(benchmark, [_stepper(local, ACTION, 1),
                                                _stepper(remote, ACTION, 1)], rounds=3)
    finally:
        remote.close()
        local.close()
    _report(benchmark, "ray_over_in_process_throughput", local_s / ray_s,
            f"{NARROW} envs, tiny hf model: in-process {local_s:.2f} s/step, 2 actors "
            f"{ray_s:.2f} s/step: {local_s / ray_s:.2f} of the in-process throughput")
