"""Hostile JSON in a corpus (deep nesting, an integer past Python's digit limit) is one line
naming the file, exit 2, in every reader and in a resumed sweep, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from floor_tasks.harness.corpus_io import CorruptCorpusError, read_records, with_digest
from tests.helpers.records import record_json

DEEP = "[" * 100_000 + "]" * 100_000
LONG_INT = "9" * 5_000
GOOD = json.dumps(with_digest(record_json("A1", "A", True)))


@pytest.mark.parametrize(("line", "problem"), [
    (DEEP, "invalid JSON: nested too deeply"),
    (GOOD[:-1] + f', "x": {LONG_INT}}}', "invalid JSON: an integer of more than"),
    (GOOD.replace('"repeat": 0', f'"repeat": {LONG_INT}'), "invalid JSON: an integer of more"),
], ids=["deep", "long-int-extra", "long-int-field"])
@pytest.mark.parametrize("ending", ["\n", ""], ids=["whole", "cut"])
@pytest.mark.filterwarnings("ignore::floor_tasks.harness.corpus_io.TruncatedLineWarning")
def test_hostile_line_is_a_corrupt_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          line: str, problem: str, ending: str) -> None:
    (tmp_path / "runs.jsonl").write_text(GOOD + "\n" + line + ending, encoding="ascii")
    if ending:  # a cut last line is skipped with a warning; a whole one is refused
        with pytest.raises(CorruptCorpusError, match=f"runs.jsonl:2: {problem}"):
            read_records(tmp_path)
    assert main(["floor", "compare", str(tmp_path), str(tmp_path)]) == (2 if ending else 0)
    err = capsys.readouterr().err
    if ending:
        assert err.count("\n") == 1 and f"runs.jsonl:2: {problem}" in err


def test_hostile_metadata_is_a_corrupt_corpus(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "metadata.json").write_text(DEEP, encoding="ascii")
    assert main(["floor", "run", "--tasks", "A1", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metadata.json: invalid JSON: nested too deeply" in err
    assert not (tmp_path / "runs.jsonl").exists()
