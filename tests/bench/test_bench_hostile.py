"""The inputs that once hung, at 1×, 10× and 100× their size (pytest-benchmark; never asserted).

Linear time means a flat time per byte: ``benchmark.extra_info["per_byte_vs_smallest"]`` is the
time per byte at that size divided by the time per byte at 1×, measured earlier in the same run
(about 1 when linear, about the size ratio when quadratic). Run with::

    python -m pytest tests/bench/test_bench_hostile.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" --benchmark-json=hostile.json
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends.redaction import redact
from floor_tasks.harness.sweep_config import SweepConfigError, load_sweep
from tests.helpers.per_byte import PerByte

pytestmark = pytest.mark.benchmark

BASE = 40_000  # the 1× size: one long word of this size took 148 s to redact; sweep files
# of 4 MB are refused by their size, and those within it by the first limit they pass
SCALES = {"1x": 1, "10x": 10, "100x": 100}


def _redact(text: str) -> Any:
    return redact(text, ["sk-secret"])


def _load_sweep(text: str) -> Any:
    """Load ``text`` as a sweep file; a refusal (a limit) is a result too."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "sweep.yaml")
        path.write_text(text, encoding="utf-8")
        try:
            return load_sweep(path)
        except SweepConfigError as exc:
            return exc


SWEEP = "sweep_name: s\nmodels:\n  - name: m\n    backend: {name: oracle}\n"
SHAPES: dict[str, tuple[Callable[[str], Any], str, str, str]] = {
    # name: (function, head, unit repeated up to the size, tail)
    "redact_one_word": (_redact, "", "y", ""),
    "redact_one_word_then_url": (_redact, "", "y", "://u:pw@host"),
    "redact_schemes": (_redact, "", "a://", ""),
    "redact_userinfo": (_redact, "", "a://b@", ""),
    "redact_urls_and_keys": (_redact, "", "see http://u:pw@host/v1?k=sk-secret ", ""),
    "sweep_long_name": (_load_sweep, SWEEP.replace("name: m", "name: "), "m", ""),
    "sweep_nesting": (_load_sweep, SWEEP + "description: ", "[", ""),
    "sweep_aliases": (_load_sweep, SWEEP + "    extra:\n      a: &a [1, 2, 3, 4, 5, 6, 7, 8]\n"
                      "      b:\n", "        - *a\n", ""),
    "sweep_repeats": (_load_sweep, SWEEP + "repeats: ", "9", "\n"),
}
PER_BYTE = PerByte()


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_hostile_time_per_byte(benchmark: Any, shape: str, scale: str) -> None:
    function, head, unit, tail = SHAPES[shape]
    text = head + unit * (BASE * SCALES[scale] // len(unit)) + tail
    benchmark.pedantic(function, args=(text,), rounds=max(1, 20 // SCALES[scale]), iterations=1)
    PER_BYTE.record(benchmark, shape, len(text))
