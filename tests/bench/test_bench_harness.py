"""Harness benchmarks: overhead per step against a served model, and throughput vs concurrency.

Run: ``python -m pytest tests/bench/test_bench_harness.py -m benchmark --benchmark-only``.
Figures are ratios against baselines measured in the same run; nothing asserts on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.backends import SamplingParams
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.replay import RecordingBackend, ReplayBackend
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.runner import Job, RunSettings, run_jobs

pytestmark = pytest.mark.benchmark

JOBS = [Job(task_id=t) for t in ("A01", "A1", "B3", "C1")]
SETTINGS = RunSettings(sampling=SamplingParams(max_tokens=24))
RESULTS: dict[str, float] = {}


def _steps(records: list[RunRecord]) -> int:
    return sum(r.trajectory.turns for r in records)


def _mean_s(benchmark) -> float | None:
    """The benchmark's mean seconds per round; None under ``--benchmark-disable`` (no stats)."""
    stats = getattr(benchmark, "stats", None)
    return None if stats is None else stats.stats.mean


def _served(tiny_server: tuple[str, str], concurrency: int = 8) -> OpenAIBackend:
    base_url, model = tiny_server
    return OpenAIBackend(model=model, base_url=base_url, api_key_env=None,
                         concurrency=concurrency)


@pytest.fixture(scope="module")
def recording(tiny_server: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served model's responses to JOBS, recorded once for the replay floor."""
    cache = tmp_path_factory.mktemp("bench") / "cache.jsonl"
    list(run_jobs(JOBS, RecordingBackend(_served(tiny_server), cache), SETTINGS, batch_size=1))
    return cache


def test_step_through_transformers_serve(benchmark, tiny_server) -> None:
    backend = _served(tiny_server)
    records = benchmark.pedantic(lambda: list(run_jobs(JOBS, backend, SETTINGS, batch_size=1)),
                                 rounds=3, iterations=1)
    if (mean := _mean_s(benchmark)) is None:
        return
    RESULTS["served_step_s"] = mean / _steps(records)
    benchmark.extra_info["s_per_step"] = RESULTS["served_step_s"]


def test_harness_overhead_with_replay(benchmark, recording, tiny_server) -> None:
    backend = ReplayBackend(recording, model=tiny_server[1])
    records = benchmark.pedantic(lambda: list(run_jobs(JOBS, backend, SETTINGS, batch_size=1)),
                                 rounds=5, iterations=1)
    if (mean := _mean_s(benchmark)) is None:
        return
    RESULTS["overhead_step_s"] = mean / _steps(records)
    benchmark.extra_info["s_per_step"] = RESULTS["overhead_step_s"]
    if "served_step_s" in RESULTS:
        ratio = RESULTS["overhead_step_s"] / RESULTS["served_step_s"]
        benchmark.extra_info["overhead_vs_served_step"] = ratio
        print(f"\nharness overhead per step = {ratio:.1%} of a transformers-serve step (goal < 5%)")


@pytest.mark.parametrize("concurrency", [1, 2, 4, 8])
def test_throughput_vs_concurrency(benchmark, tiny_server, concurrency: int) -> None:
    backend = _served(tiny_server, concurrency)
    jobs = [Job(task_id="A1", repeat=r) for r in range(8)]
    records = benchmark.pedantic(
        lambda: list(run_jobs(jobs, backend, SETTINGS, batch_size=len(jobs))),
        rounds=2, iterations=1)
    if (mean := _mean_s(benchmark)) is None:
        return
    steps_per_s = _steps(records) / mean
    RESULTS[f"c{concurrency}"] = steps_per_s
    benchmark.extra_info["steps_per_s"] = steps_per_s
    speedup = steps_per_s / RESULTS.get("c1", steps_per_s)
    benchmark.extra_info["speedup_vs_concurrency_1"] = speedup
    print(f"\nconcurrency {concurrency}: {steps_per_s:.1f} steps/s, x{speedup:.2f} vs 1")
