"""Speed of the ``hf`` backend's static (compiled) cache on a GPU (pytest-benchmark; timing is
never asserted).

A random model shaped like Qwen2-0.5B, vectors of N = 64 and 256 ``AgentWorld/Terminal-v0``
envs, every world-model answer forced to 128 new tokens. For each cache (``dynamic``, the
default, and ``static``) and N:

* ``raw``: ``backend.complete`` on the exact requests one vector step sends (the ceiling);
* ``vector``: one ``step`` of ``gym.make_vec(..., num_envs=N)`` on the same backend.

Before timing, each (cache, N) is called twice on those requests, so compiling (the static
cache's first call of a shape) is not timed; that first call's seconds go to
``benchmark.extra_info["first_call_s"]``. New tokens per second go to ``extra_info`` and the
terminal, with the ratios ``raw / vector`` (goal: at least 0.9) and, for the static cache,
``static vector / dynamic vector``. Skipped without CUDA. Run with::

    python -m pytest tests/bench/test_bench_hf_cache.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import ChatRequest, make_backend
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.scripted import ScriptedBackend
from tests.bench.test_bench_sim import ACTION, ENV_ID, _build_qwen05_shaped

pytestmark = [pytest.mark.benchmark, pytest.mark.gpu]

NEW_TOKENS = 128
SIZES = [64, 256]
CACHES = ["dynamic", "static"]
SETTINGS = {"sampling": {"max_tokens": NEW_TOKENS, "temperature": 0.7,
                         "extra": {"min_new_tokens": NEW_TOKENS}},
            "scenarios": ["terminal-extract-archive"]}
MEDIANS: dict[tuple[str, int, str], float] = {}
FIRST_CALL_S: dict[tuple[str, int], float] = {}


@pytest.fixture(scope="module")
def model_dir(tiny_lm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return _build_qwen05_shaped(tiny_lm_dir, tmp_path_factory.mktemp("qwen05"))


@pytest.fixture(scope="module", params=CACHES)
def backend(request: pytest.FixtureRequest, model_dir: Path) -> Iterator[HFBackend]:
    """One backend per cache, batching the largest vector in one ``generate``."""
    live = make_backend({"name": "hf", "model": str(model_dir), "device": "cuda",
                         "dtype": "bfloat16", "batch_size": max(SIZES),
                         "cache": request.param})
    assert isinstance(live, HFBackend)
    yield live
    live.close()


def _requests(num_envs: int) -> list[ChatRequest]:
    """The exact requests one vector step sends (a request does not depend on the backend)."""
    capture = ScriptedBackend(keep_requests=True)
    envs = gym.make_vec(ENV_ID, num_envs=num_envs, backend=capture, **SETTINGS)
    envs.reset(seed=0)
    envs.step([ACTION] * num_envs)
    return capture.batches[0]


def _warm(backend: HFBackend, num_envs: int, requests: list[ChatRequest]) -> None:
    """Two untimed calls (the first compiles the static cache's shapes); the first's seconds
    are kept."""
    if (backend.cache, num_envs) in FIRST_CALL_S:
        return
    start = time.perf_counter()
    backend.complete(requests)
    FIRST_CALL_S[backend.cache, num_envs] = time.perf_counter() - start
    backend.complete(requests)


def _record(benchmark: Any, cache: str, num_envs: int, way: str) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    MEDIANS[cache, num_envs, way] = median = stats.stats.median
    tokens_per_s = num_envs * NEW_TOKENS / median
    benchmark.extra_info.update(new_tokens_per_s=round(tokens_per_s),
                                first_call_s=round(FIRST_CALL_S[cache, num_envs], 1))
    print(f"[{cache} N={num_envs}] {way}: {tokens_per_s:,.0f} new tokens/s, first call "
          f"{FIRST_CALL_S[cache, num_envs]:.1f} s")
    raw, vector = (MEDIANS.get((cache, num_envs, w)) for w in ("raw", "vector"))
    if raw and vector:
        benchmark.extra_info["raw_over_vector"] = round(raw / vector, 3)
        print(f"[{cache} N={num_envs}] vector env reaches {raw / vector:.0%} of raw throughput")
    dynamic, static = (MEDIANS.get((c, num_envs, "vector")) for c in CACHES)
    if dynamic and static and way == "vector":
        benchmark.extra_info["static_over_dynamic"] = round(dynamic / static, 2)
        print(f"[N={num_envs}] static-cache vector env is {dynamic / static:.2f}x the dynamic")


@pytest.mark.parametrize("num_envs", SIZES)
def test_raw_backend(benchmark: Any, backend: HFBackend, num_envs: int) -> None:
    requests = _requests(num_envs)
    _warm(backend, num_envs, requests)
    completions = benchmark.pedantic(backend.complete, args=(requests,), rounds=3)
    assert [c.usage.output_tokens for c in completions] == [NEW_TOKENS] * num_envs
    _record(benchmark, backend.cache, num_envs, "raw")


@pytest.mark.parametrize("num_envs", SIZES)
def test_vector_env(benchmark: Any, backend: HFBackend, num_envs: int) -> None:
    _warm(backend, num_envs, _requests(num_envs))
    envs = gym.make_vec(ENV_ID, num_envs=num_envs, backend=backend, **SETTINGS)

    def fresh() -> tuple[tuple, dict]:
        envs.reset(seed=0)
        return (), {}

    result = benchmark.pedantic(lambda: envs.step([ACTION] * num_envs), setup=fresh, rounds=3,
                                warmup_rounds=1)
    assert result[4]["world_model"]["called"].all()
    assert (result[4]["world_model"]["output_tokens"] == NEW_TOKENS).all()
    _record(benchmark, backend.cache, num_envs, "vector")
    envs.close()
