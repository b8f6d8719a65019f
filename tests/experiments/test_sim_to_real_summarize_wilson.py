"""``--summarize`` rebuilds the per-seed Wilson intervals of a results file from its runs, as it
rebuilds the bootstrap: a stale Wilson column (the docs' tables copy it) does not survive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from trainers.experiments.sim_to_real.run import main

COMMITTED = Path(__file__).parents[2] / "docs" / "sim_to_real_results.json"


def test_summarize_rebuilds_each_seeds_wilson_interval_from_its_items(tmp_path: Path) -> None:
    copy = tmp_path / "results.json"
    shutil.copy(COMMITTED, copy)
    stale = json.loads(copy.read_text())
    stale["C1"]["summary"]["sim-constant"]["wilson95_items_per_seed"][0] = [0.0, 1.0]
    copy.write_text(json.dumps(stale))
    main(["--summarize", str(copy)])
    rebuilt = json.loads(copy.read_text())["C1"]["summary"]["sim-constant"]
    stored = json.loads(COMMITTED.read_text())["C1"]["summary"]["sim-constant"]
    assert rebuilt["wilson95_items_per_seed"] == stored["wilson95_items_per_seed"]
    assert rebuilt["wilson95_items_per_seed"][0] != [0.0, 1.0]
