"""A corpus stays whole and honest: resume refuses other settings, one writer at a time,
``rescore`` replaces its output, ``compare`` fails on what it could not compare, ``report`` counts
each run once, bad command lines are one line that writes nothing, and the pytest plugin gives
each repeat its own run id."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

import floor_tasks.env
from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.cli import main
from floor_tasks.harness.agents import OracleBackend
from floor_tasks.harness.corpus import CorpusLockedError
from floor_tasks.harness.corpus_io import read_records, with_digest
from floor_tasks.harness.pytest_plugin import AgentFloor
from floor_tasks.harness.sweep import (
    UnfingerprintedRunsWarning,
    fingerprint,
    plan,
    run_sweep,
    single_model_config,
)
from tests.helpers.records import record_json


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentworld: error: "), err
    return err


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (folders as empty), by relative path."""
    return {str(p.relative_to(folder)): b"" if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


def scripted(model: str) -> str:
    return json.dumps({"name": "scripted", "model": model})


def run_args(out: Path, *extra: str, model: str = "org-a/m") -> list[str]:
    return ["floor", "run", "--backend", scripted(model), "--tasks", "A1", "--out", str(out),
            "--no-progress", *extra]


def metadata(corpus: Path) -> dict:
    return json.loads((corpus / "metadata.json").read_text())


# ------------------------------------------------------------------ resume checks the settings


@pytest.mark.parametrize(("extra", "model", "changed"), [
    ((), "org-b/m", "backend.model: 'org-a/m' -> 'org-b/m'"),
    (("--system-prompt-suffix", "Be brief."), "org-a/m", "system_prompt_sha256: "),
    (("--max-steps", "3"), "org-a/m", "max_steps: None -> 3"),
    (("--max-tokens", "64"), "org-a/m", "sampling.max_tokens: 512 -> 64"),
], ids=["model", "prompt", "step budget", "sampling"])
def test_resume_with_other_settings_is_refused_and_writes_nothing(
        extra: tuple[str, ...], model: str, changed: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c"
    assert main(run_args(corpus)) == 0
    before = snapshot(corpus)
    capsys.readouterr()
    assert main(run_args(corpus, *extra, model=model)) == 2
    err = one_error_line(capsys)
    assert f"{corpus}: the runs of m there were made with other settings (" in err
    assert changed in err and "--name" in err and "--out" in err
    assert snapshot(corpus) == before


def test_an_arm_without_runs_takes_new_settings(tmp_path: Path) -> None:
    def dead(backend: dict) -> NoReturn:
        raise ConnectionError("no server")

    typo = single_model_config({"name": "scripted", "model": "org-a/mm"}, name="m", tasks=["A1"])
    assert run_sweep(typo, tmp_path, progress=False, make_agent=dead).written == 0
    fixed = single_model_config({"name": "scripted", "model": "org-a/m"}, name="m", tasks=["A1"])
    assert run_sweep(fixed, tmp_path, progress=False).written == 1
    assert metadata(tmp_path)["fingerprints"]["m"]["backend"]["model"] == "org-a/m"


def test_a_fingerprint_holds_no_password() -> None:
    backend = {"name": "openai", "model": "m", "base_url": "http://alice:s3cret@127.0.0.1:9/v1"}
    [arm] = single_model_config(backend, name="m").arms()
    assert fingerprint(arm)["backend"]["base_url"] == "http://***@127.0.0.1:9/v1"


def test_a_no_op_resume_keeps_each_arms_system_prompt(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c"
    argv = run_args(corpus, "--system-prompt-suffix", "Be brief.")
    assert main(argv) == 0
    arms = metadata(corpus)["arms"]
    assert arms["m"]["system_prompt"].endswith("\nBe brief.")
    assert main(argv) == 0
    assert "(0 new runs, 1 already done)" in capsys.readouterr().out
    assert metadata(corpus)["arms"] == arms
    assert metadata(corpus)["fingerprints"]["m"]["backend"] == {"name": "scripted",
                                                                "model": "org-a/m"}


def test_a_new_arm_adds_to_the_metadata_of_the_earlier_ones(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    assert main(run_args(corpus)) == 0
    assert main(run_args(corpus, "--name", "other", model="org-b/m")) == 0
    assert sorted(metadata(corpus)["arms"]) == sorted(metadata(corpus)["fingerprints"]) == [
        "m", "other"]
    assert len(read_records(corpus)) == 2


def test_the_default_run_resumes_a_corpus_of_an_older_version_with_a_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``agentworld floor run`` with no arguments (the set-up's command) into a ``runs/`` that
    an older version wrote: no fingerprints, ``arms`` emptied by its last rerun."""
    monkeypatch.chdir(tmp_path)
    assert main(["floor", "run", "--no-progress"]) == 0
    corpus = tmp_path / "runs" / "oracle"
    old = {k: v for k, v in metadata(corpus).items() if k != "fingerprints"} | {"arms": {}}
    (corpus / "metadata.json").write_text(json.dumps(old))
    records = (corpus / "runs.jsonl").read_bytes()
    capsys.readouterr()
    with pytest.warns(UnfingerprintedRunsWarning, match="runs of oracle there were recorded by "
                                                        "an older agentworld"):
        assert main(["floor", "run", "--no-progress"]) == 0
    assert "(0 new runs, 30 already done)" in capsys.readouterr().out
    assert (corpus / "runs.jsonl").read_bytes() == records
    assert metadata(corpus)["fingerprints"]["oracle"]["backend"] == {"name": "oracle"}


# ------------------------------------------------------------------ one writer at a time


class IntrudedOracle(OracleBackend):
    """The oracle; at its first call, a second sweep tries to write the same corpus."""

    def __init__(self, intrude: Callable[[], tuple[str, int]]) -> None:
        self.intrude = intrude
        self.outcomes: list[tuple[str, int]] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not self.outcomes:
            self.outcomes.append(self.intrude())
        return super().complete(requests)


def test_a_second_writer_is_refused_at_once_and_the_corpus_stays_readable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1", "B1"])

    def intrude() -> tuple[str, int]:
        with pytest.raises(CorpusLockedError) as refused:
            run_sweep(config, tmp_path, progress=False)
        return str(refused.value), main(["floor", "run", "--tasks", "A1,B1", "--name", "oracle",
                                         "--out", str(tmp_path), "--no-progress"])

    agent = IntrudedOracle(intrude)
    outcome = run_sweep(config, tmp_path, progress=False, make_agent=lambda _: agent)
    [(message, status)] = agent.outcomes
    assert message.startswith(f"{tmp_path}: another sweep or rescore is writing this corpus")
    assert status == 1 and "another sweep or rescore" in one_error_line(capsys)
    assert (outcome.written, outcome.status) == (2, "finished")
    assert sorted(r.run_id for r in read_records(tmp_path)) == sorted(
        s.run_id for s in plan(config))
    assert run_sweep(config, tmp_path, progress=False).skipped == 2  # the lock was released


# ------------------------------------------------------------------ rescore, compare, report


def test_a_second_rescore_replaces_the_stale_verdicts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c"
    assert main(["floor", "run", "--tasks", "A1,C3", "--out", str(corpus), "--no-progress"]) == 0
    assert main(["floor", "rescore", str(corpus)]) == 0
    assert [r.passed for r in read_records(corpus / "rescored")] == [True, True]
    verify = floor_tasks.env.verify
    monkeypatch.setattr(floor_tasks.env, "verify", lambda trace: {
        **verify(trace), "passed": False, "failure_class": "F7"})
    capsys.readouterr()
    assert main(["floor", "rescore", str(corpus)]) == 0
    assert "re-scored 2 runs into" in capsys.readouterr().out
    assert [(r.passed, r.verdict.failure_class)
            for r in read_records(corpus / "rescored")] == [(False, "F7"), (False, "F7")]


def write_corpus(folder: Path, task_ids: Sequence[str], model: str = "m") -> Path:
    """A corpus of passed synthetic runs of ``task_ids`` (tier A)."""
    folder.mkdir(parents=True)
    (folder / "runs.jsonl").write_text("".join(
        json.dumps(with_digest(record_json(t, "A", True, model))) + "\n" for t in task_ids))
    return folder


@pytest.mark.parametrize(("new_tasks", "flags", "status", "verdict"), [
    (["A4", "A5"], [], 1, "FAIL: no case compared; 3 BASE case(s) missing from NEW"),
    ([], [], 1, "FAIL: no case compared; 3 BASE case(s) missing from NEW"),
    ([], ["--allow-missing"], 1, "FAIL: no case compared (0 cases compared"),
    (["A1", "A2"], [], 1, "FAIL: 1 BASE case(s) missing from NEW (pass --allow-missing"),
    (["A1", "A2"], ["--allow-missing"], 0, "OK: no regressions (2 cases compared"),
], ids=["disjoint", "empty", "empty allowed", "partial", "partial allowed"])
def test_compare_fails_on_cases_it_could_not_compare(
        new_tasks: list[str], flags: list[str], status: int, verdict: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    base = write_corpus(tmp_path / "base", ["A1", "A2", "A3"])
    new = write_corpus(tmp_path / "new", new_tasks)
    assert main(["floor", "compare", str(base), str(new), *flags]) == status
    assert capsys.readouterr().out.startswith(verdict)


def test_report_refuses_a_run_named_by_two_inputs(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "c", ["A1", "A2"])
    before = snapshot(tmp_path)
    assert main(["floor", "report", str(corpus), str(corpus / "runs.jsonl")]) == 2
    err = one_error_line(capsys)
    assert f"run 'm|A1|v0|0' is in both {corpus} and {corpus / 'runs.jsonl'}" in err
    assert snapshot(tmp_path) == before
    other = write_corpus(tmp_path / "other", ["A3"], model="n")
    assert main(["floor", "report", str(corpus), str(other)]) == 0
    assert "3 runs, 2 models." in (corpus / "report" / "report.md").read_text()


# ------------------------------------------------------------------ bad command lines


BAD_COMMANDS = {
    "report of an empty corpus": (["floor", "report", "{empty}"], "no run records in "),
    "rescore of an empty corpus": (["floor", "rescore", "{empty}"], "no run records in "),
    "rescore onto its own corpus": (["floor", "rescore", "{full}", "--out", "{full}"],
                                    "is the corpus being re-scored"),
    "negative batch size": (["floor", "run", "--batch-size", "-1", "--out", "{new}"],
                            "argument --batch-size: must be at least 1, not "),
    "zero batch size": (["floor", "run", "--batch-size", "0", "--out", "{new}"],
                        "argument --batch-size: must be at least 1, not "),
    "threshold past 1": (["floor", "compare", "{full}", "{full}", "--threshold", "10"],
                         "argument --threshold: must be from 0 to 1, not 10"),
    "unknown tier": (["floor", "list", "--tier", "A", "Z"],
                     "argument --tier: unknown tier 'Z' (known: A, A0, B, C, D, E)"),
}


@pytest.mark.parametrize("case", BAD_COMMANDS)
def test_a_bad_command_line_is_one_line_and_writes_nothing(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_corpus(tmp_path / "empty", [])
    write_corpus(tmp_path / "full", ["A1"])
    argv, expected = BAD_COMMANDS[case]
    before = snapshot(tmp_path)
    assert main([arg.format(**{n: tmp_path / n for n in ("empty", "full", "new")})
                 for arg in argv]) == 2
    assert expected in one_error_line(capsys)
    assert capsys.readouterr().out == ""
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("command", "written"), [("report", "report/report.md"),
                                                  ("rescore", "rescored/runs.jsonl")])
def test_a_corpus_named_by_its_file_writes_beside_it(command: str, written: str,
                                                     tmp_path: Path) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1"])
    assert run_sweep(config, tmp_path, progress=False).written == 1
    assert main(["floor", command, str(tmp_path / "runs.jsonl")]) == 0
    assert (tmp_path / written).is_file()


# ------------------------------------------------------------------ pytest plugin


def test_the_plugin_gives_each_repeat_its_own_run_id() -> None:
    result = AgentFloor().run({"name": "oracle"}, tasks="A01", repeats=3, seed=5)
    assert [(r.run_id, r.repeat, r.seed) for r in result.records] == [
        (f"agent|A01|v0|{i}", i, 5 + i) for i in range(3)]
