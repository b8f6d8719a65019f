"""Speed of ``agentworld serve`` against the in-process vector env (timing is never asserted).

* **Throughput** on the tiny ``hf`` model: W sessions (W = 1, 16, 64) each play ``STEPS`` turns
  of ``AgentWorld/Terminal-v0`` through OpenEnv's async client, every turn a world-model call
  forced to ``NEW_TOKENS`` new tokens; the same turns through ``gym.make_vec(num_envs=W)`` in
  process on the same model. Ratio server / vector (goal at 64: at least 0.8).
* **Overhead** on the ``scripted`` backend (costs nothing): seconds per env-step through the
  server at 64 sessions (wall, and the server process's CPU) minus an in-process ``env.step``
  of the same episodes (goal: at most 1 ms). The client runs on the same 2 cores.
* **Memory** per idle session: the server's resident memory after 64 sessions reset, less
  before, over 64.

Each figure goes to ``benchmark.extra_info`` and the terminal. Run with::

    python -m pytest tests/bench/test_bench_serve.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("openenv")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

import agentworld_envs  # noqa: E402, F401 - registers the AgentWorld ids
from tests.helpers.openenv_server import serve, stats  # noqa: E402

pytestmark = pytest.mark.benchmark

ENV_ID = "AgentWorld/Terminal-v0"
ACTION = '[{"keystrokes": "ls -la\\n", "duration": 1}]'
STEPS = 4
NEW_TOKENS = 32
SETTINGS = {"sampling": {"max_tokens": NEW_TOKENS, "temperature": 0.7,
                         "extra": {"min_new_tokens": NEW_TOKENS}},
            "scenarios": ["terminal-extract-archive"], "max_steps": 50}
WIDTHS = (1, 16, 64)


def _served_steps_per_s(url: str, width: int, steps: int = STEPS) -> float:
    """Steps per second of ``width`` sessions stepping together, timed from the moment every
    session is connected and reset."""
    async def play(seed: int, ready: list[int], all_ready: asyncio.Event,
                   start: asyncio.Event) -> None:
        async with GenericEnvClient(base_url=url, message_timeout_s=3600) as env:
            await env.reset(seed=seed)
            ready.append(seed)
            if len(ready) == width:
                all_ready.set()
            await start.wait()
            for _ in range(steps):
                await env.step({"message": ACTION})

    async def run() -> float:
        ready: list[int] = []
        all_ready, start = asyncio.Event(), asyncio.Event()
        players = [asyncio.ensure_future(play(seed, ready, all_ready, start))
                   for seed in range(width)]
        await all_ready.wait()
        began = time.perf_counter()
        start.set()
        await asyncio.gather(*players)
        return time.perf_counter() - began

    return width * steps / asyncio.run(run())


def _warm_served_steps_per_s(url: str, width: int, steps: int = STEPS) -> float:
    """Steps per second after one untimed round (the batching window learns the width)."""
    _served_steps_per_s(url, width, 1)
    return _served_steps_per_s(url, width, steps)


def _vector_steps_per_s(backend: Any, width: int, steps: int = STEPS) -> float:
    envs = gym.make_vec(ENV_ID, num_envs=width, backend=backend, **SETTINGS)
    envs.reset(seed=0)
    began = time.perf_counter()
    for _ in range(steps):
        envs.step([ACTION] * width)
    elapsed = time.perf_counter() - began
    envs.close()
    return width * steps / elapsed


def _cpu_s(pid: int) -> float:
    """CPU seconds (user and system) a process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def test_throughput_against_the_vector_env(benchmark: Any, tiny_lm_dir: Path) -> None:
    backend = {"name": "hf", "model": str(tiny_lm_dir), "batch_size": 64}
    figures: dict[str, float] = {}

    def measure() -> None:
        from agentworld_envs.backends import make_backend

        live = make_backend(backend)
        with serve(ENV_ID, "--backend", json.dumps(backend), "--max-sessions", "64",
                   "--kw", json.dumps(SETTINGS)) as (url, _):
            for width in WIDTHS:  # alternately, so that a change in load hits both
                before = stats(url)["world_model"]
                figures[f"served_{width}"] = _warm_served_steps_per_s(url, width)
                after = stats(url)["world_model"]
                figures[f"batches_{width}"] = after["batches"] - before["batches"]
                figures[f"vector_{width}"] = _vector_steps_per_s(live, width)

    benchmark.pedantic(measure, rounds=1, iterations=1)
    for width in WIDTHS:
        ratio = figures[f"served_{width}"] / figures[f"vector_{width}"]
        benchmark.extra_info[f"W{width}"] = {
            "served_steps_per_s": round(figures[f"served_{width}"], 2),
            "vector_steps_per_s": round(figures[f"vector_{width}"], 2),
            "served_over_vector": round(ratio, 3),
            "batches_for_steps": (figures[f"batches_{width}"], (STEPS + 1) * width)}
        print(f"W={width}: served {figures[f'served_{width}']:.1f} steps/s, vector "
              f"{figures[f'vector_{width}']:.1f} steps/s, ratio {ratio:.2f}; "
              f"{figures[f'batches_{width}']} batches for {(STEPS + 1) * width} steps")


def test_overhead_and_memory_on_a_free_backend(benchmark: Any) -> None:
    width, steps = 64, 10
    figures: dict[str, float] = {}

    def measure() -> None:
        with serve(ENV_ID, "--backend", "scripted", "--max-sessions", "64",
                   "--kw", json.dumps(SETTINGS)) as (url, process):
            before = _rss_mb(process.pid)

            async def idle() -> float:
                clients = [GenericEnvClient(base_url=url) for _ in range(width)]
                for seed, client in enumerate(clients):
                    await client.connect()
                    await client.reset(seed=seed)
                after = _rss_mb(process.pid)
                for client in clients:
                    await client.close()
                return after

            figures["mb_per_idle_session"] = (asyncio.run(idle()) - before) / width
            _served_steps_per_s(url, width, 1)  # warm-up
            cpu = _cpu_s(process.pid)
            figures["served_s"] = 1 / _served_steps_per_s(url, width, steps)
            figures["server_cpu_s"] = (_cpu_s(process.pid) - cpu) / (width * steps)
        envs = [gym.make(ENV_ID, backend="scripted", **SETTINGS) for _ in range(width)]
        for seed, env in enumerate(envs):
            env.reset(seed=seed)
        began = time.perf_counter()
        for _ in range(steps):  # the same steps, each env on its own, one after the other
            for env in envs:
                env.step(ACTION)
        figures["inprocess_s"] = (time.perf_counter() - began) / (width * steps)

    benchmark.pedantic(measure, rounds=1, iterations=1)
    overhead_ms = (figures["served_s"] - figures["inprocess_s"]) * 1e3
    cpu_overhead_ms = (figures["server_cpu_s"] - figures["inprocess_s"]) * 1e3
    benchmark.extra_info.update(
        served_ms_per_step=round(figures["served_s"] * 1e3, 3),
        inprocess_ms_per_step=round(figures["inprocess_s"] * 1e3, 3),
        overhead_ms_per_step=round(overhead_ms, 3),
        server_cpu_ms_per_step=round(figures["server_cpu_s"] * 1e3, 3),
        server_cpu_overhead_ms_per_step=round(cpu_overhead_ms, 3),
        mb_per_idle_session=round(figures["mb_per_idle_session"], 3))
    print(f"64 sessions, free backend: {figures['served_s'] * 1e3:.3f} ms per env-step served, "
          f"{figures['inprocess_s'] * 1e3:.3f} ms in process, overhead {overhead_ms:.3f} ms "
          f"(server CPU {figures['server_cpu_s'] * 1e3:.3f} ms per step: {cpu_overhead_ms:.3f} "
          f"ms over in-process); "
          f"{figures['mb_per_idle_session']:.3f} MB per idle session")
