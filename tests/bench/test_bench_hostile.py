"""The inputs that once hung, at 1×, 10× and 100× their size (pytest-benchmark; never asserted).

Linear time means a flat time per byte: ``benchmark.extra_info["per_byte_vs_smallest"]`` is the
time per byte at that size divided by the time per byte at 1×, measured earlier in the same run
(about 1 when linear, about the size ratio when quadratic). Run with::

    python -m pytest tests/bench/test_bench_hostile.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" --benchmark-json=hostile.json
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentworld_envs.backends.redaction import redact
from tests.helpers.per_byte import PerByte

pytestmark = pytest.mark.benchmark

BASE = 40_000  # the 1× size: one long word of this size took 148 s to redact
SCALES = {"1x": 1, "10x": 10, "100x": 100}


def _redact(text: str) -> Any:
    return redact(text, ["sk-secret"])


SHAPES: dict[str, tuple[Callable[[str], Any], str, str]] = {
    # name: (function, unit repeated up to the size, tail)
    "redact_one_word": (_redact, "y", ""),
    "redact_one_word_then_url": (_redact, "y", "://u:pw@host"),
    "redact_schemes": (_redact, "a://", ""),
    "redact_userinfo": (_redact, "a://b@", ""),
    "redact_urls_and_keys": (_redact, "see http://u:pw@host/v1?k=sk-secret ", ""),
}
PER_BYTE = PerByte()


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_hostile_time_per_byte(benchmark: Any, shape: str, scale: str) -> None:
    function, unit, tail = SHAPES[shape]
    text = unit * (BASE * SCALES[scale] // len(unit)) + tail
    benchmark.pedantic(function, args=(text,), rounds=max(1, 20 // SCALES[scale]), iterations=1)
    PER_BYTE.record(benchmark, shape, len(text))
