"""The hostile-input benchmark's sweep files reach the limit each is named after: at 1x
(40 KB) each is refused by that limit, or read, never refused as broken YAML (the long-name
file put its name after the document's last key, so only the YAML parser's error was timed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor_tasks.harness.sweep_config import SweepConfig, SweepConfigError, load_sweep
from tests.bench.test_bench_hostile import SHAPES, shape_text

REFUSED_AT_1X = {"sweep_long_name": "models.0.name: string should have at most 100 characters",
                 "sweep_nesting": "nested deeper than 64 levels",
                 "sweep_repeats": "repeats: a number of 40000 characters",
                 "sweep_huge_file": "larger than 1048576 bytes",
                 "sweep_aliases": None}
"""What loading each sweep shape at 1x gives: the refusal's words, or None: it is read."""


def test_every_sweep_shape_is_listed() -> None:
    assert sorted(REFUSED_AT_1X) == sorted(name for name in SHAPES if name.startswith("sweep_"))


@pytest.mark.parametrize("shape", sorted(REFUSED_AT_1X))
def test_a_sweep_shape_reaches_its_limit(shape: str, tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(shape_text(SHAPES[shape], "1x"), encoding="utf-8")
    if REFUSED_AT_1X[shape] is None:
        assert isinstance(load_sweep(path), SweepConfig)
        return
    with pytest.raises(SweepConfigError) as refused:
        load_sweep(path)
    assert REFUSED_AT_1X[shape] in str(refused.value)
    assert "invalid YAML" not in str(refused.value)
