"""Fidelity-bench throughput in items/s, batched against unbatched (pytest-benchmark).

Both arms run :func:`agentworld_envs.bench.run.predict` plus the judge-free scoring on the same
N = 16 floor items of the shipped sample, with the ``hf`` backend on the tiny test model and
every completion forced to the same 32 new tokens, so both do equal work. ``batched`` sends 16
requests per backend call, ``unbatched`` one. The ratio unbatched / batched (how many times
faster batching is) is measured in the same run and goes to ``benchmark.extra_info`` and the
terminal; no timing is asserted. Run with::

    python -m pytest tests/bench/test_bench_wm.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts=""
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import SamplingParams, make_backend
from agentworld_envs.bench.run import predict, score_fidelity
from agentworld_envs.bench.sample import load_sample

pytestmark = pytest.mark.benchmark

ITEMS = 16
NEW_TOKENS = 32
MEDIANS: dict[str, float] = {}


@pytest.fixture(scope="module")
def world_model(tiny_lm_dir: Path) -> Any:
    backend = make_backend({"name": "hf", "model": str(tiny_lm_dir), "batch_size": ITEMS})
    yield backend
    backend.close()


@pytest.mark.parametrize("arm", ["batched", "unbatched"])
def test_bench_throughput(benchmark: Any, world_model: Any, arm: str) -> None:
    items = [i for i in load_sample() if i.task == "floor"][:ITEMS]
    sampling = SamplingParams(max_tokens=NEW_TOKENS, seed=0,
                              extra={"min_new_tokens": NEW_TOKENS})
    batch_size = ITEMS if arm == "batched" else 1

    def run() -> Any:
        return score_fidelity(items, predict(world_model, items, sampling, batch_size))

    result = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    assert len(result.records) == len(items)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    MEDIANS[arm] = median = stats.stats.median
    benchmark.extra_info["items_per_s"] = round(len(items) / median, 2)
    if arm == "unbatched" and "batched" in MEDIANS:
        ratio = median / MEDIANS["batched"]
        benchmark.extra_info["unbatched_over_batched"] = round(ratio, 2)
        print(f"\nbench: batched predict+score is {ratio:.1f}x the unbatched throughput "
              f"({len(items) / MEDIANS['batched']:.1f} vs {len(items) / median:.1f} items/s)")
