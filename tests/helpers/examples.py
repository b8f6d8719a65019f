"""Run the example scripts as a user does: a fresh interpreter, the documented arguments."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
QUICK = re.compile(r"Quick check[^:]*:\s*``python examples/(?P<name>\S+)(?P<args>[^`]*)``")
HANG_GUARD_S = 3600
"""Only a hang ends an example run (a loaded 2-core machine took over 300 s for the TRL quick
check)."""


def quick_check(name: str) -> list[str]:
    """The arguments of the example's documented ``Quick check: ``python examples/...```` line."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / name).read_text(encoding="utf-8"))) or ""
    found = QUICK.search(doc)
    assert found and found["name"] == name, f"{name}'s docstring documents no quick check"
    return shlex.split(found["args"])


def run_example(name: str, *args: str, cwd: Path) -> str:
    """Run one example script; return its stdout, failing the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"},
        timeout=HANG_GUARD_S)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def load_example(name: str, monkeypatch: Any) -> ModuleType:
    """The example script ``examples/<name>.py`` imported in this process, to call its ``main``
    with parts replaced (``monkeypatch`` puts it in ``sys.modules`` for the test alone, where
    its dataclasses look themselves up)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module
