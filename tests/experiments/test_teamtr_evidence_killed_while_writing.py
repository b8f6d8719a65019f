"""``examples/teamtr_evidence.py --replot FILE --docs DIR`` killed while it rewrites FILE leaves
FILE as it was.

The results were written by truncating the file first, so a kill during the write left the
file it had read (the committed results, whose runs are kept nowhere else) cut in half.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers.examples import HANG_GUARD_S
from trainers.experiments.teamtr_evidence import RESULTS_NAME

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / RESULTS_NAME
KILLED_WHILE_WRITING = """
import os, pathlib, signal, sys
from trainers.experiments.teamtr_evidence import RESULTS_NAME, main
write_text = pathlib.Path.write_text
def killed_halfway(self, text, *args, **kwargs):
    if RESULTS_NAME not in self.name:
        return write_text(self, text, *args, **kwargs)
    with open(self, "w", encoding="utf-8") as handle:  # what a kill during the write leaves
        handle.write(text[:len(text) // 2])
    os.kill(os.getpid(), signal.SIGKILL)
pathlib.Path.write_text = killed_halfway
main(sys.argv[1:])
"""


def test_a_replot_killed_while_writing_the_results_it_read_leaves_them_whole(
        tmp_path: Path) -> None:
    results = tmp_path / RESULTS_NAME
    shutil.copy(COMMITTED, results)
    before = results.read_bytes()
    child = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, "--replot", str(results),
                            "--docs", str(tmp_path), "--out", str(tmp_path / "out")],
                           cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert results.read_bytes() == before
    assert json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
