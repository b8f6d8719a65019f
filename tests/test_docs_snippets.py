"""Every ```python block of README.md and docs/*.md runs, each in a fresh interpreter.

A block that needs what CI lacks (a GPU, a model server, a real model) is marked in the doc by
a preceding ``<!-- snippet: skip (the reason) -->`` comment and is reported as skipped. A
``# -> text`` comment line says what the line above it prints: the block must print it, in order.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.helpers.examples import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*snippet:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")
PRINTS = re.compile(r"^\s*# -> (?P<line>.*)$", re.MULTILINE)


class Snippet(NamedTuple):
    doc: Path
    line: int
    code: str
    skip: str | None


def snippets(doc: Path) -> list[Snippet]:
    """The ```python blocks of ``doc`` (dedented: a list item's is indented), with the skip
    reason of a comment right before one."""
    found, lines = [], doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = SKIP.search(before)
            found.append(Snippet(doc, start, textwrap.dedent("\n".join(lines[start:end])) + "\n",
                                 marker["reason"] if marker else None))
            i = end
        i += 1
    return found


ALL = [s for doc in DOCS for s in snippets(doc)]


def test_the_docs_have_snippets_and_every_skip_names_a_reason() -> None:
    assert len(ALL) >= 10
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert text.count("<!-- snippet:") == len(SKIP.findall(text)), doc.name


@pytest.mark.parametrize(
    "snippet", ALL, ids=[f"{s.doc.relative_to(ROOT)}:{s.line}" for s in ALL])
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    done = subprocess.run(
        [sys.executable, "-c", snippet.code], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"},
        timeout=HANG_GUARD_S)
    assert done.returncode == 0, (
        f"{snippet.doc.name}:{snippet.line} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    said = [m["line"].rstrip() for m in PRINTS.finditer(snippet.code)]
    printed = iter(line.rstrip() for line in done.stdout.splitlines())
    missing = [line for line in said if line not in printed]  # a subsequence, in order
    assert not missing, (f"{snippet.doc.name}:{snippet.line} did not print {missing}:\n"
                         f"{done.stdout[-2000:]}")


def test_the_quick_start_shows_what_it_prints() -> None:
    """The quick start's reward comment is a ``# ->`` line, so that ``test_snippet_runs``
    compares it with the output (it once said 1.0 where the snippet printed 0.0)."""
    quick = next(s for s in snippets(ROOT / "docs" / "agentworld_envs.md")
                 if "search-lighthouse-keeper" in s.code)
    assert any("answer_observed" in m["line"] for m in PRINTS.finditer(quick.code))


BATCHED = "ONE batched model call"
COUNT = """
calls = world_model.batches
print(json.dumps([len(calls), *map(len, calls), sorted(set(infos["observation_source"]))]))
"""


def test_the_vector_snippet_sends_one_batched_call_per_step(tmp_path: Path) -> None:
    """The README's vector snippet does what its comment says: its step asks the world model,
    every env at once (issue 30, item 5). Its world model is swapped for one that keeps its
    requests; ``test_snippet_runs`` runs it as written."""
    snippet = next(s for s in snippets(ROOT / "README.md") if BATCHED in s.code)
    default = re.search(r"^world_model = None\b.*$", snippet.code, re.MULTILINE)
    assert default, "the snippet no longer starts from world_model = None"
    code = (snippet.code.replace(default[0], "from agentworld_envs.backends.scripted import "
                                 "ScriptedBackend; world_model = ScriptedBackend("
                                 "keep_requests=True)") + "import json\n" + COUNT)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-4000:]
    envs = int(re.search(r"num_envs=(\d+)", snippet.code)[1])
    assert json.loads(done.stdout.splitlines()[-1]) == [1, envs, ["placeholder"]]
