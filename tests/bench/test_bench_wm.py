"""Fidelity-bench throughput in items/s, batched against unbatched (pytest-benchmark).

Both arms run :func:`agentworld_envs.bench.run.predict` plus the judge-free scoring on the same
N = 16 items of the shipped sample, the first whose prompts fit the tiny test model's context
(the ``hf`` backend refuses the others, which would be timed as instant failures), greedy, up
to 32 new tokens: both arms must get a generation for every item, and the same ones, so they do
equal work (forcing the length with ``min_new_tokens`` would send a batch through padded
``generate``, 4x slower on these prompts of 3,000-7,500 tokens, where ``wm bench`` decodes it
ragged). ``batched`` sends 16 requests per backend call, ``unbatched`` one. The ratio
unbatched / batched (how many times faster batching is) is measured in the same run and goes to
``benchmark.extra_info`` and the terminal; no timing is asserted. Run with::

    python -m pytest tests/bench/test_bench_wm.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts=""
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import BackendError, ChatRequest, SamplingParams, make_backend
from agentworld_envs.backends.hf import _PromptFillsContext
from agentworld_envs.bench.items import BenchItem
from agentworld_envs.bench.run import predict, score_fidelity
from agentworld_envs.bench.sample import load_sample

pytestmark = pytest.mark.benchmark

ITEMS = 16
NEW_TOKENS = 32
MEDIANS: dict[str, float] = {}
OUTPUTS: dict[str, list[str | None]] = {}
"""Each arm's outputs: the same greedy answers, whatever the batch size."""


@pytest.fixture(scope="module")
def world_model(tiny_lm_dir: Path) -> Any:
    backend = make_backend({"name": "hf", "model": str(tiny_lm_dir), "batch_size": ITEMS})
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def items(world_model: Any) -> list[BenchItem]:
    """The first ``ITEMS`` items of the shipped sample whose prompts the model can read (one
    untimed token each); any refusal but a prompt past the context fails the benchmark."""
    sample = load_sample()
    answers = world_model.complete_each(
        [ChatRequest(item.messages(), sampling=SamplingParams(max_tokens=1)) for item in sample])
    for answer in answers:
        if isinstance(answer, BackendError) and not isinstance(answer, _PromptFillsContext):
            raise answer
    fitting = [item for item, answer in zip(sample, answers, strict=True)
               if not isinstance(answer, BackendError)]
    assert len(fitting) >= ITEMS, f"only {len(fitting)} sample items fit the model's context"
    return fitting[:ITEMS]


@pytest.mark.parametrize("arm", ["batched", "unbatched"])
def test_bench_throughput(benchmark: Any, world_model: Any, items: list[BenchItem],
                          arm: str) -> None:
    sampling = SamplingParams(max_tokens=NEW_TOKENS, seed=0)
    batch_size = ITEMS if arm == "batched" else 1

    def run() -> Any:
        return score_fidelity(items, predict(world_model, items, sampling, batch_size))

    result = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    OUTPUTS[arm] = [r["output"] for r in result.records]
    assert None not in OUTPUTS[arm]
    assert len(set(map(tuple, OUTPUTS.values()))) == 1, "the arms' greedy outputs differ"
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
