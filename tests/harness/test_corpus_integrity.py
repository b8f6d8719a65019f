"""Damaged corpora are refused by every reader, naming the file and line; a cut last line is not.

Each corruption is made on a real corpus written by a sweep: a flipped digit or letter, an
invalid UTF-8 byte, a broken JSON token, a change that leaves a valid record (caught by the
record's content digest). ``report``, ``rescore``, ``compare`` and resuming
(``floor run`` / :func:`run_sweep` on the corpus) all refuse it with one line and exit code 2,
leaving the file as it was. A last line cut mid-write (what SIGKILL leaves) is skipped with a
warning by the readers and rerun by resume.
"""

from __future__ import annotations

import json
import pickle
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.corpus_io import (
    CorruptCorpusError,
    NoDigestWarning,
    TruncatedLineWarning,
    read_records,
)
from floor_tasks.harness.sweep import plan, run_sweep, single_model_config

CONFIG = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1", "B1", "C1"],
                             repeats=2)
RUN_ARGS = ["--tasks", "A1,B1,C1", "--repeats", "2", "--name", "oracle", "--no-progress"]

Edit = Callable[[list[bytes]], int]
"""Damages the lines of a corpus in place and returns the (1-based) damaged line."""


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean")
    assert run_sweep(CONFIG, out, progress=False).written == 6
    return out


def _line_of(lines: list[bytes], run_id: str) -> int:
    return next(i for i, line in enumerate(lines) if f'"run_id": "{run_id}"'.encode() in line)


def _replace(run_id: str, old: bytes, new: bytes) -> Edit:
    def edit(lines: list[bytes]) -> int:
        index = _line_of(lines, run_id)
        assert old in lines[index]
        lines[index] = lines[index].replace(old, new, 1)
        return index + 1

    return edit


CORRUPTIONS: dict[str, tuple[Edit, str]] = {
    "run_id digit flipped into a duplicate": (
        _replace("oracle|B1|v0|1", b'"oracle|B1|v0|1"', b'"oracle|B1|v0|0"'),
        "duplicate run_id 'oracle|B1|v0|0' (first at line "),
    "repeat digit flipped": (
        _replace("oracle|A1|v0|1", b'"repeat": 1', b'"repeat": 0'),
        "run_id 'oracle|A1|v0|1' does not match its fields ('oracle|A1|v0|0')"),
    "task letter flipped to an unknown task": (
        _replace("oracle|B1|v0|0", b'"task_id": "B1"', b'"task_id": "Q1"'),
        "unknown task_id 'Q1'"),
    "task letter flipped to another task": (
        _replace("oracle|C1|v0|0", b'"task_id": "C1"', b'"task_id": "A1"'),
        "tier 'C' is not task A1's tier 'A'"),
    "run_id task letter flipped": (
        _replace("oracle|C1|v0|1", b'"run_id": "oracle|C1', b'"run_id": "oracle|B1'),
        "does not match its fields ('oracle|C1|v0|1')"),
    "variant digit flipped": (
        _replace("oracle|A1|v0|0", b'"variant": "v0"', b'"variant": "v7"'),
        "task A1 has no variant 'v7'"),
    "invalid UTF-8 byte": (
        _replace("oracle|B1|v0|0", b'"model": "oracle"', b'"model": "or\xffcle"'),
        "invalid UTF-8 byte 0xff at byte "),
    "JSON token damaged": (
        _replace("oracle|C1|v0|0", b'"passed": true', b'"passed": trUe'),
        "invalid JSON: Expecting"),
    "passed flag turned into a string": (
        _replace("oracle|A1|v0|1", b'"passed": true', b'"passed": "true"'),
        "field 'passed': input should be a valid boolean, got str"),
    "turns changed, still a valid record": (
        _replace("oracle|B1|v0|1", b'"turns": ', b'"turns": 1'),
        "content digest mismatch: the record was changed after it was written"),
    "a letter of the system message changed": (
        _replace("oracle|C1|v0|1", b"careful assistant", b"carefal assistant"),
        "content digest mismatch"),
}


def _damaged(clean: Path, tmp_path: Path, edit: Edit) -> tuple[Path, int]:
    corpus = tmp_path / "corpus"
    shutil.copytree(clean, corpus)
    runs = corpus / "runs.jsonl"
    lines = runs.read_bytes().splitlines(keepends=True)
    line = edit(lines)
    runs.write_bytes(b"".join(lines))
    return corpus, line


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_every_reader_refuses_a_damaged_corpus_naming_file_and_line(
        name: str, clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit, reason = CORRUPTIONS[name]
    corpus, line = _damaged(clean, tmp_path, edit)
    runs = corpus / "runs.jsonl"
    where = f"{runs}:{line}: "
    with pytest.raises(CorruptCorpusError) as caught:
        read_records(corpus)
    assert (caught.value.path, caught.value.line) == (runs, line)
    assert str(caught.value).startswith(where) and reason in str(caught.value)

    before = runs.read_bytes()
    commands = {"report": ["floor", "report", str(corpus), "--out", str(tmp_path / "report")],
                "rescore": ["floor", "rescore", str(corpus), "--out", str(tmp_path / "rescored")],
                "compare": ["floor", "compare", str(clean), str(corpus)],
                "resume": ["floor", "run", *RUN_ARGS, "--out", str(corpus)]}
    for command, argv in commands.items():
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and where in err and reason in err, (command, err)
    with pytest.raises(CorruptCorpusError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        run_sweep(CONFIG, corpus, progress=False)
    assert runs.read_bytes() == before, "a refused corpus must not be written to"
    assert not (tmp_path / "rescored" / "runs.jsonl").exists()


def test_a_cut_last_line_is_skipped_by_readers_and_rerun_by_resume(
        clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def cut(lines: list[bytes]) -> int:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]  # SIGKILL mid-write: no newline
        return len(lines)

    corpus, line = _damaged(clean, tmp_path, cut)
    with pytest.warns(TruncatedLineWarning, match=rf"runs\.jsonl:{line}: skipped a truncated"):
        assert len(read_records(corpus)) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLineWarning)
        assert main(["floor", "report", str(corpus), "--out", str(tmp_path / "report")]) == 0
        assert main(["floor", "rescore", str(corpus), "--out", str(tmp_path / "rescored")]) == 0
        assert main(["floor", "compare", str(clean), str(corpus), "--allow-missing"]) == 0
    capsys.readouterr()
    outcome = run_sweep(CONFIG, corpus, progress=False)
    assert (outcome.written, outcome.skipped, outcome.errors) == (1, 5, [])
    ids = [r.run_id for r in read_records(corpus)]
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(s.run_id for s in plan(CONFIG))


def test_a_complete_but_unreadable_last_line_is_not_taken_for_a_cut_one(
        clean: Path, tmp_path: Path) -> None:
    def damage_last(lines: list[bytes]) -> int:
        lines[-1] = lines[-1].replace(b'"passed": true', b'"passed": tru', 1)
        return len(lines)

    corpus, line = _damaged(clean, tmp_path, damage_last)
    with pytest.raises(CorruptCorpusError, match=rf"runs\.jsonl:{line}: invalid JSON"):
        RunCorpus(corpus)


def test_the_error_survives_pickling_for_worker_processes(tmp_path: Path) -> None:
    error = CorruptCorpusError(tmp_path / "runs.jsonl", 3, "duplicate run_id 'x'")
    again = pickle.loads(pickle.dumps(error))
    assert (again.path, again.line, again.reason, str(again)) == (
        error.path, error.line, error.reason, str(error))
    assert isinstance(again, ValueError)


def test_a_missing_corpus_is_a_one_line_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["floor", "report", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err


def test_an_old_corpus_without_digests_loads_with_one_warning(clean: Path, tmp_path: Path) -> None:
    records = read_records(clean)
    old = tmp_path / "runs.jsonl"
    old.write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    with pytest.warns(NoDigestWarning, match="6 record\\(s\\) without a content digest") as seen:
        again = read_records(old)
    assert len(seen) == 1 and again == records
