"""Speed of the batched vector env (pytest-benchmark; timing is never asserted).

Our own overhead: ``AgentWorld/Search-v0`` vectors of N = 1, 64 and 1,024 envs on a backend
that costs nothing (:class:`FreeBackend`, whose own time is measured and subtracted), timed at
turn 1 and at turn 20 of an episode; the microseconds per env-step and the ratios turn 20 /
turn 1 and N / (N = 1) go to ``benchmark.extra_info`` and to the terminal. The memory per env
of N = 1,024 envs after their reset and after 20 turns is traced with ``tracemalloc``.

Throughput with a real model: three ways to produce the same N = 32 world-model steps with the
``hf`` backend:

* ``raw``: ``backend.complete`` on the exact requests the vector env sends (the ceiling);
* ``vector``: one ``step`` of ``gym.make_vec(..., num_envs=32)`` (one batched call);
* ``sequential``: 32 single envs stepped one after the other (32 calls of one request).

Every completion is forced to the same number of new tokens (64: a world model's real steps
run to thousands, so decoding, which batching speeds up, dominates), so the three do equal work. The
ratios ``raw / vector`` (goal: at least 0.9) and ``sequential / vector`` (goal: at least 5) go to
``benchmark.extra_info`` and to the terminal. The CPU run uses the tiny test model; the ``gpu``
run uses a random model shaped like Qwen2-0.5B. Run with::

    python -m pytest tests/bench/test_bench_sim.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts=""
"""

from __future__ import annotations

import json
import time
import timeit
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, ChatRequest, Completion, make_backend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.registration import env_id

pytestmark = pytest.mark.benchmark

NUM_ENVS = 32
NEW_TOKENS = 64
ENV_ID = env_id("terminal")
ACTION = '[{"keystrokes": "ls -la\\n", "duration": 1}]'
SETTINGS = {"sampling": {"max_tokens": NEW_TOKENS, "temperature": 0.7,
                         "extra": {"min_new_tokens": NEW_TOKENS}},
            "scenarios": ["terminal-extract-archive"]}
MEDIANS: dict[tuple[str, str], float] = {}


def _record(benchmark: Any, device: str, name: str) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    MEDIANS[device, name] = median = stats.stats.median
    benchmark.extra_info["steps_per_s"] = round(NUM_ENVS / median, 2)
    raw, vector = MEDIANS.get((device, "raw")), MEDIANS.get((device, "vector"))
    if vector and name == "vector" and raw:
        benchmark.extra_info["raw_over_vector"] = round(raw / vector, 3)
        print(f"[{device}] vector env reaches {raw / vector:.0%} of raw backend throughput")
    if vector and name == "sequential":
        benchmark.extra_info["sequential_over_vector"] = round(median / vector, 2)
        print(f"[{device}] vector env is {median / vector:.1f}x the per-env sequential loop")


def _build_qwen05_shaped(tiny_lm_dir: Path, directory: Path) -> Path:
    """A random bf16 model shaped like Qwen2-0.5B, with the tiny model's tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=896, intermediate_size=4864,
                         num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         max_position_embeddings=32768, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module", params=[
    pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)])
def hf_backend(request: pytest.FixtureRequest, tiny_lm_dir: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Backend]]:
    """A live ``hf`` backend that batches all 32 requests in one ``generate``."""
    device = request.param
    if device == "cuda" and not pytest.importorskip("torch").cuda.is_available():
        pytest.skip("no CUDA device")
    model_dir = tiny_lm_dir if device == "cpu" else _build_qwen05_shaped(
        tiny_lm_dir, tmp_path_factory.mktemp("qwen05"))
    backend = make_backend({"name": "hf", "model": str(model_dir), "device": device,
                            "dtype": "auto", "batch_size": NUM_ENVS})
    yield device, backend
    backend.close()


def _captured_requests() -> list:
    """The exact requests one vector step sends (a request does not depend on the backend)."""
    capture = ScriptedBackend(keep_requests=True)
    envs = gym.make_vec(ENV_ID, num_envs=NUM_ENVS, backend=capture, **SETTINGS)
    envs.reset(seed=0)
    envs.step([ACTION] * NUM_ENVS)
    return capture.batches[0]


def test_raw_backend(benchmark: Any, hf_backend: tuple[str, Backend]) -> None:
    device, backend = hf_backend
    requests = _captured_requests()
    completions = benchmark.pedantic(backend.complete, args=(requests,), rounds=5,
                                     warmup_rounds=1)
    assert [c.usage.output_tokens for c in completions] == [NEW_TOKENS] * NUM_ENVS
    _record(benchmark, device, "raw")


def test_vector_env(benchmark: Any, hf_backend: tuple[str, Backend]) -> None:
    device, backend = hf_backend
    envs = gym.make_vec(ENV_ID, num_envs=NUM_ENVS, backend=backend, **SETTINGS)

    def fresh() -> tuple[tuple, dict]:
        envs.reset(seed=0)
        return (), {}

    result = benchmark.pedantic(lambda: envs.step([ACTION] * NUM_ENVS), setup=fresh, rounds=5,
                                warmup_rounds=1)
    assert result[4]["world_model"]["called"].all()
    assert (result[4]["world_model"]["output_tokens"] == NEW_TOKENS).all()
    _record(benchmark, device, "vector")


def test_sequential_envs(benchmark: Any, hf_backend: tuple[str, Backend]) -> None:
    device, backend = hf_backend
    envs = [gym.make(ENV_ID, backend=backend, **SETTINGS) for _ in range(NUM_ENVS)]

    def fresh() -> tuple[tuple, dict]:
        for i, env in enumerate(envs):
            env.reset(seed=i)  # what sub-env i of the vector env gets from seed=0
        return (), {}

    results = benchmark.pedantic(lambda: [env.step(ACTION) for env in envs], setup=fresh,
                                 rounds=3, warmup_rounds=1)
    assert all(r[4]["world_model"]["output_tokens"] == NEW_TOKENS for r in results)
    _record(benchmark, device, "sequential")


SEARCH_ID = env_id("search")
SEARCH_ACTION = '{"name": "web_search", "arguments": {"queries": ["Corran Point lighthouse"]}}'
TIMED_STEPS = 4
"""Consecutive steps timed per round of the overhead benchmarks."""
LONG_EPISODE = 100
"""``max_episode_steps`` of the overhead benchmarks: no episode ends while they run."""
OVERHEAD_US: dict[tuple[int, int], float] = {}


class FreeBackend(Backend):
    """A backend that costs nothing: one fixed observation per request; ``spent_s`` is its time.

    Like ``scripted`` it answers at once, so it is not ``blocking``: the simulator calls it in
    its own thread (a blocking backend's calls go through a worker thread, a hand-off of about
    0.1-0.5 ms per batched call, which a vector of 1,024 envs shares).
    """

    name = "free"
    blocking = False
    REPLY = ("<predicted_observation>\n[1] Corran Point Light, keeper's log\n"
             "</predicted_observation>")

    def __init__(self) -> None:
        self.spent_s = 0.0

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One fixed completion per request."""
        start = time.perf_counter()
        completions = [Completion(text=self.REPLY) for _ in requests]
        self.spent_s += time.perf_counter() - start
        return completions


def _search_envs(num_envs: int, backend: Backend) -> Any:
    return gym.make_vec(SEARCH_ID, num_envs=num_envs, backend=backend,
                        max_episode_steps=LONG_EPISODE, scenarios=["search-lighthouse-keeper"])


def _json_floor_us(observation: str, repeats: int = 7, number: int = 1000) -> float:
    """Microseconds of the JSON work any text env pays per step (``json.loads`` of the action,
    ``json.dumps`` of the observation), best of ``repeats``: the machine's speed in this run."""
    def floor() -> None:
        json.loads(SEARCH_ACTION)
        json.dumps({"observation": observation}, ensure_ascii=False)
    return min(timeit.repeat(floor, number=number, repeat=repeats)) / number * 1e6


def _record_overhead(benchmark: Any, num_envs: int, turn: int, backend_s: list[float],
                     observation: str) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    backend_median = sorted(backend_s)[len(backend_s) // 2]
    per_step = num_envs * TIMED_STEPS / 1e6
    OVERHEAD_US[num_envs, turn] = us = (stats.stats.median - backend_median) / per_step
    best_us = (stats.stats.min - min(backend_s)) / per_step
    floor_us = _json_floor_us(observation)
    benchmark.extra_info.update(overhead_us_per_env_step=round(us, 2),
                                best_overhead_us_per_env_step=round(best_us, 2),
                                backend_us_per_env_step=round(backend_median / per_step, 3),
                                json_floor_us=round(floor_us, 3),
                                ratio_to_json_floor=round(us / floor_us, 1))
    line = (f"N={num_envs} turns {turn}-{turn + TIMED_STEPS - 1}: {us:.1f} us of our own per "
            f"env-step (best round "
            f"{best_us:.1f}; {us / floor_us:.1f}x the JSON floor of a step, {floor_us:.2f} us)")
    if turn != 1 and (num_envs, 1) in OVERHEAD_US:
        ratio = us / OVERHEAD_US[num_envs, 1]
        benchmark.extra_info["ratio_to_turn_1"] = round(ratio, 2)
        line += f", {ratio:.2f}x turn 1"
    if num_envs != 1 and (1, turn) in OVERHEAD_US:
        ratio = us / OVERHEAD_US[1, turn]
        benchmark.extra_info["ratio_to_one_env"] = round(ratio, 2)
        line += f", {ratio:.2f}x N=1"
    print(line)


@pytest.mark.parametrize("num_envs", [1, 64, 1024])
@pytest.mark.parametrize("turn", [1, 20])
def test_env_overhead(benchmark: Any, turn: int, num_envs: int) -> None:
    """``TIMED_STEPS`` vector steps from ``turn`` on, on the free backend; the backend's own
    time is subtracted. Several steps per round, so that the collector's periodic full passes
    count at their real rate (one step per round can keep meeting, or keep missing, them)."""
    backend = FreeBackend()
    envs = _search_envs(num_envs, backend)
    actions = [SEARCH_ACTION] * num_envs
    backend_s: list[float] = []

    def to_turn() -> tuple[tuple, dict]:
        envs.reset(seed=0)
        for _ in range(turn - 1):
            envs.step(actions)
        backend.spent_s = 0.0
        return (), {}

    def steps() -> Any:
        for _ in range(TIMED_STEPS):
            result = envs.step(actions)
        backend_s.append(backend.spent_s)
        return result

    result = benchmark.pedantic(steps, setup=to_turn, rounds=max(9, 2048 // (num_envs * turn)),
                                warmup_rounds=1)
    assert (result[4]["turn"] == turn + TIMED_STEPS - 1).all()
    assert result[4]["world_model"]["ok"].all()
    _record_overhead(benchmark, num_envs, turn, backend_s, result[0][0])
    envs.close()


def test_memory_per_env(benchmark: Any) -> None:
    """Traced memory per env of 1,024 envs after their reset and after 20 turns."""
    num_envs, turns = 1024, 20
    traced: dict[str, float] = {}

    def measure() -> None:
        tracemalloc.start()
        try:
            envs = _search_envs(num_envs, FreeBackend())
            envs.reset(seed=0)
            traced["reset"] = tracemalloc.get_traced_memory()[0] / num_envs
            for _ in range(turns):
                envs.step([SEARCH_ACTION] * num_envs)
            traced["turn_20"] = tracemalloc.get_traced_memory()[0] / num_envs
        finally:
            tracemalloc.stop()

    benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update({f"kib_per_env_{k}": round(v / 1024, 1) for k, v in traced.items()})
    print(f"memory per env (N={num_envs}): {traced['reset'] / 1024:.1f} KiB after reset, "
          f"{traced['turn_20'] / 1024:.1f} KiB after {turns} turns")
    assert traced["turn_20"] > traced["reset"] > 0
