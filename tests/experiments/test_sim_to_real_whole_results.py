"""``examples/sim_to_real.py`` writes its results whole or not at all.

``--summarize`` rewrites a results file in place, and the experiment rewrites ``results.json``
after every arm; both wrote it by truncating it first, so a kill during the write left it empty
or cut (2 of 40 SIGKILLs near the end of ``--summarize`` on the committed results emptied
the file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trainers.experiments.sim_to_real.run import resummarize_file

COMMITTED = Path(__file__).parents[2] / "docs" / "sim_to_real_results.json"


def test_a_summarize_stopped_while_writing_leaves_the_results_as_they_were(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results.json"
    shutil.copy(COMMITTED, results)
    before = results.read_bytes()

    def stopped_halfway(self: Path, text: str, *args: object, **kwargs: object) -> int:
        with open(self, "w", encoding="utf-8") as handle:  # as a kill during the write leaves it
            handle.write(text[:len(text) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", stopped_halfway)
    with pytest.raises(KeyboardInterrupt):
        resummarize_file(results)
    assert results.read_bytes() == before
    assert [path.name for path in tmp_path.iterdir()] == ["results.json"]
