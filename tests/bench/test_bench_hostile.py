"""The inputs that once hung, at 1×, 10× and 100× their size (pytest-benchmark; never asserted).

Issue 29's hangs: one long word through redaction, a sweep file's alias bomb, huge ``repeats``,
long names, deep nesting and a huge file, a long server reply (as content and as an error body,
and one past ``max_reply_bytes``), and a long episode. ``benchmark.extra_info`` holds, against
the 1× figure measured earlier in the same run, ``time_vs_smallest`` (linear: about 10 at 10×
and 100 at 100×; quadratic: 100 and 10,000) and ``per_byte_vs_smallest`` (linear: about 1).
Times are the process's CPU time (``time.process_time``, the server thread's included), the
fastest of at least three rounds: the shared machines' wall time drifts by more than these
ratios. A long episode's figure is a step's cost at turn 30 and 300 against turn 3 (flat:
about 1), in wall time, the turns of one episode timed one after another. Run with::

    python -m pytest tests/bench/test_bench_hostile.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" --benchmark-json=hostile.json
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentworld_envs.backends import ChatRequest
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.redaction import redact
from floor_tasks.harness.sweep_config import SweepConfigError, load_sweep
from floor_tasks.harness.yaml_limits import MAX_BYTES
from tests.bench.test_bench_long_episode import episode_step_times
from tests.helpers.per_byte import PerByte
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response

pytestmark = pytest.mark.benchmark(timer=time.process_time)

BASE = 40_000  # the 1× size: one long word of this size took 148 s to redact; sweep files
# of 4 MB are refused by their size, and those within it by the first limit they pass
SCALES = {"1x": 1, "10x": 10, "100x": 100}
REPLY_CAP = 1 << 20  # max_reply_bytes of the reply_past_cap shape


@dataclass
class Context:
    """What a shape's ``prepare`` may use: a folder for files, and the loopback server's reply."""

    folder: Path
    server: FakeOpenAIServer
    reply: list[Reply]


def _redact(text: str) -> Any:
    return redact(text, ["sk-secret"])


def _write_sweep(text: str, context: Context) -> Path:
    path = context.folder / "sweep.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _load_sweep(path: Path) -> Any:
    """Load a sweep file; a refusal (a limit) is a result too."""
    try:
        return load_sweep(path)
    except SweepConfigError as exc:
        return exc


def _serve(status: int, **options: Any) -> Callable[[str, Context], Any]:
    """A ``prepare`` that has the server answer ``status`` with the text (as a chat reply's
    content when 200, else as the error body), and returns the backend that will ask."""

    def prepare(text: str, context: Context) -> OpenAIBackend:
        body = json.dumps(chat_response(text)) if status == 200 else text
        context.reply[:] = [Reply(status, body.encode())]
        return OpenAIBackend(model="fake", base_url=context.server.base_url, api_key_env=None,
                             max_retries=0, timeout_s=600.0, **options)

    return prepare


def _ask(backend: OpenAIBackend) -> Any:
    """One request; a fault (an error body, a reply past the cap) is a result too."""
    return backend.complete_each([ChatRequest(messages=[{"role": "user", "content": "hi"}])])[0]


@dataclass(frozen=True)
class Shape:
    """``head + unit * n + tail`` of about ``base × scale`` characters; ``prepare`` turns it into
    ``run``'s argument outside the timing."""

    run: Callable[[Any], Any]
    head: str
    unit: str
    tail: str = ""
    prepare: Callable[[str, Context], Any] | None = None
    base: int = BASE


SWEEP = "sweep_name: s\nmodels:\n  - name: m\n    backend: {name: oracle}\n"
SHAPES: dict[str, Shape] = {
    "redact_one_word": Shape(_redact, "", "y"),
    "redact_one_word_then_url": Shape(_redact, "", "y", "://u:pw@host"),
    "redact_schemes": Shape(_redact, "", "a://"),
    "redact_userinfo": Shape(_redact, "", "a://b@"),
    "redact_urls_and_keys": Shape(_redact, "", "see http://u:pw@host/v1?k=sk-secret "),
    "sweep_long_name": Shape(_load_sweep, "sweep_name: s\nmodels:\n  - backend: {name: oracle}\n"
                             "    name: ", "m", "\n", prepare=_write_sweep),
    "sweep_nesting": Shape(_load_sweep, SWEEP + "description: ", "[", prepare=_write_sweep),
    "sweep_aliases": Shape(_load_sweep, SWEEP + "    extra:\n      a: &a [1, 2, 3, 4, 5, 6, 7, "
                           "8]\n      b:\n", "        - *a\n", prepare=_write_sweep),
    "sweep_repeats": Shape(_load_sweep, SWEEP + "repeats: ", "9", "\n", prepare=_write_sweep),
    # 1, 10 and 100 MiB (the campaign's 30 and 100 MB files ran past 90 s)
    "sweep_huge_file": Shape(_load_sweep, SWEEP, "# a comment line to make the file huge\n",
                             prepare=_write_sweep, base=MAX_BYTES + 1),
    "reply_one_word": Shape(_ask, "", "y", prepare=_serve(200)),
    "reply_error_body_one_word": Shape(_ask, "", "y", prepare=_serve(500)),
    # 1, 10 and 100 MiB replies against a 1 MiB cap: each read stops at the cap
    "reply_past_cap": Shape(_ask, "", "y", prepare=_serve(200, max_reply_bytes=REPLY_CAP),
                            base=REPLY_CAP + 1),
}
PER_BYTE = PerByte()


def shape_text(spec: Shape, scale: str) -> str:
    """The input of ``spec`` at ``scale`` (a key of :data:`SCALES`)."""
    return spec.head + spec.unit * (spec.base * SCALES[scale] // len(spec.unit)) + spec.tail


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    reply: list[Reply] = []
    with FakeOpenAIServer(lambda hit, request: reply[0]) as server:
        yield Context(tmp_path_factory.mktemp("hostile"), server, reply)


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_hostile_time_per_byte(benchmark: Any, context: Context, shape: str, scale: str) -> None:
    spec = SHAPES[shape]
    text = shape_text(spec, scale)
    argument = spec.prepare(text, context) if spec.prepare else text
    benchmark.pedantic(spec.run, args=(argument,), rounds=max(3, 20 // SCALES[scale]),
                       iterations=1)
    PER_BYTE.record(benchmark, shape, len(text))


EPISODES = 3  # the median of each turn's step time over this many 300-turn episodes
TURNS = {"1x": 3, "10x": 30, "100x": 300}


@pytest.mark.parametrize("domain", ["terminal", "os", "web"])
def test_long_episode_step_cost_at_turn_3_30_300(benchmark: Any, domain: str) -> None:
    """One long episode's steps, each timed: a step at turn 30 and 300 against turn 3 (each the
    median over the episodes of the 5 turns ending there, turn 2 onwards)."""
    episodes = benchmark.pedantic(lambda: [episode_step_times(domain) for _ in range(EPISODES)],
                                  rounds=1, iterations=1)
    per_turn = np.median(np.array(episodes), axis=0)
    cost = {scale: statistics.median(per_turn[max(1, turn - 5):turn])
            for scale, turn in TURNS.items()}
    benchmark.extra_info.update({f"turn_{turn}_ms": round(cost[scale] * 1e3, 3)
                                 for scale, turn in TURNS.items()})
    benchmark.extra_info.update({f"{scale}_vs_1x": round(cost[scale] / cost["1x"], 2)
                                 for scale in TURNS})
