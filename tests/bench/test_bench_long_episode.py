"""A step's own cost over a long episode: turn 300 against the first turns (pytest-benchmark;
timing is never asserted).

One env per domain on the ``scripted`` backend (whose placeholder digests the request) plays
300 steps of one non-final candidate action. Each step is timed; the medians of turns 2–11 and
291–300 and their ratio (goal: at most 1.5) go to ``benchmark.extra_info`` and the terminal.
Medians leave out the odd garbage-collector pause. Run with::

    python -m pytest tests/bench/test_bench_long_episode.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import statistics
import time
import warnings
from typing import Any

import pytest

from agentworld_envs.registration import make

pytestmark = pytest.mark.benchmark

TURNS = 300
ENDINGS = ("DONE", "answer", "final", "send_msg_to_user")


def episode_step_times(domain: str) -> list[float]:
    """The time of each step of one 300-turn episode of ``domain`` on ``scripted``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scripted backend's placeholder warning
        env = make(domain, backend="scripted", max_steps=TURNS)
    _, info = env.reset(seed=0)
    action = next(a for a in info["candidate_actions"]
                  if not any(word in a for word in ENDINGS))
    times = []
    for _ in range(TURNS):
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        times.append(time.perf_counter() - start)
        if terminated or truncated:
            break
    env.close()
    assert len(times) == TURNS, f"{domain} ended at turn {len(times)}"
    return times


@pytest.mark.parametrize("domain", ["terminal", "os", "web"])
def test_step_cost_at_turn_300_against_the_first_turns(benchmark: Any, domain: str) -> None:
    times = benchmark.pedantic(episode_step_times, args=(domain,), rounds=1, iterations=1)
    early, late = statistics.median(times[1:11]), statistics.median(times[-10:])
    benchmark.extra_info.update(early_ms=round(early * 1e3, 3), late_ms=round(late * 1e3, 3),
                                late_vs_early=round(late / early, 2))
    print(f"\n{domain}: turns 2-11 {early * 1e3:.3f} ms, turns 291-300 {late * 1e3:.3f} ms, "
          f"ratio {late / early:.2f}")
