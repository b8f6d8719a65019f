"""Run one Python program under several hash seeds at once, and read what each printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def printed_under_hash_seeds(code: str, *hash_seeds: int, args: tuple[str, ...] = ()
                             ) -> list[Any]:
    """The JSON of the last line ``python -c code *args`` printed, in one process per hash
    seed (run side by side); each must exit 0."""
    runs = [subprocess.Popen([sys.executable, "-c", code, *args], text=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)},
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            for seed in hash_seeds]
    outputs = [run.communicate()[0] for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs)
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]
