"""The harness: runner, batching, corpus resume after SIGKILL, sweeps, rescore, CLI, plugin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from floor_tasks.env import FloorEnv
from floor_tasks.harness.agents import OracleBackend
from floor_tasks.harness.cli import add_commands  # noqa: F401 - the CLI must import cleanly
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.corpus_io import read_records, with_digest
from floor_tasks.harness.pytest_plugin import AgentFloor
from floor_tasks.harness.runner import Job, run_episode, run_jobs
from floor_tasks.harness.sweep import plan, run_sweep, single_model_config
from floor_tasks.harness.sweep_config import InterventionFields, load_sweep
from floor_tasks.task import load_task
from tests.helpers.examples import HANG_GUARD_S

CLI = [sys.executable, "-m", "agentworld_envs.cli"]


class CountingOracle(OracleBackend):
    """The oracle, recording the size of every batch and failing after ``fail_after`` calls."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.batches: list[int] = []
        self.fail_after = fail_after

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if self.fail_after is not None and len(self.batches) >= self.fail_after:
            raise BackendError("server at http://127.0.0.1:9/v1 returned HTTP 503")
        self.batches.append(len(requests))
        return super().complete(requests)


def test_record_has_the_reference_fields() -> None:
    record = run_episode("E5", "oracle", model="oracle")
    for key in ("schema_version", "run_id", "model", "backend", "task_id", "tier", "variant",
                "repeat", "seed", "settings", "messages", "actions", "call_log", "raw_responses",
                "termination", "final_text", "turns", "usage", "latency_s", "wall_s", "passed",
                "verdict", "timestamp_utc"):
        assert key in record, key
    assert record["passed"] and record["termination"] == "submitted" and record["turns"] == 3
    assert [c["tool_name"] for c in record["call_log"]] == [
        "lookup_record", "check_constraint", "submit_decision"]
    assert record["call_log"][1]["status"] == "error"  # the scripted compatibility failure
    roles = [m["role"] for m in record["messages"]]
    assert roles[:3] == ["system", "user", "assistant"] and roles.count("tool") == 3
    tool_ids = [m["tool_call_id"] for m in record["messages"] if m["role"] == "tool"]
    call_ids = [c["id"] for m in record["messages"] if m["role"] == "assistant"
                for c in m["tool_calls"]]
    assert tool_ids == call_ids
    json.dumps(record)  # JSON-ready


def test_episodes_advance_in_lockstep_batches() -> None:
    backend = CountingOracle()
    jobs = [Job("A1"), Job("C3"), Job("E4"), Job("A01")]
    records = list(run_jobs(jobs, backend, batch_size=3))
    assert sorted(r.task_id for r in records) == ["A01", "A1", "C3", "E4"]
    # A1 ends after 2 turns, C3 after 3, E4 after 6, then A01 runs alone.
    assert backend.batches == [3, 3, 2, 1, 1, 1, 1]


def test_callable_agent_and_settings() -> None:
    seen: list[int] = []

    def agent(messages: list[dict], tools: list[dict]) -> str:
        seen.append(len(tools))
        assert messages[0]["content"].endswith("Be brief.")
        return '{"name": "lookup_record", "arguments": {"record_id": "P104"}}'

    settings = InterventionFields(system_prompt_suffix="Be brief.",
                                  max_steps_override=5).run_settings()
    record = run_episode("A1", agent, settings=settings)
    assert record["turns"] == 5 and record["termination"] == "step_budget_exhausted"
    assert record["verdict"]["failure_class"] == "F4" and seen == [1] * 5
    assert record["settings"]["max_steps"] == 5


def test_thinking_intervention_reaches_the_request() -> None:
    settings = InterventionFields(thinking=False, extra={"top_k": 1}).run_settings()
    assert settings.sampling.extra == {"top_k": 1, "chat_template_kwargs": {
        "enable_thinking": False}}


def test_backend_failure_is_logged_and_resumed(tmp_path: Path) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks="tier:C,D")
    outcome = run_sweep(config, tmp_path, progress=False,
                        make_agent=lambda _: CountingOracle(fail_after=1))
    assert outcome.written == 0 and "HTTP 503" in outcome.errors[0]
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert len(errors[0]["run_ids"]) == 10
    outcome = run_sweep(config, tmp_path, progress=False)
    assert outcome.written == 10 and not outcome.errors
    assert json.loads((tmp_path / "metadata.json").read_text())["versions"]["python"]


def test_resume_skips_done_runs_and_drops_a_cut_line(tmp_path: Path) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1", "B1", "C1"])
    assert run_sweep(config, tmp_path, progress=False).written == 3
    runs = tmp_path / "runs.jsonl"
    lines = runs.read_text().splitlines(keepends=True)
    runs.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # a write cut mid-line
    outcome = run_sweep(config, tmp_path, progress=False)
    assert (outcome.written, outcome.skipped) == (1, 2)
    records = read_records(tmp_path)
    assert sorted(r.run_id for r in records) == sorted(s.run_id for s in plan(config))


def test_corpus_refuses_duplicates(tmp_path: Path) -> None:
    corpus = RunCorpus(tmp_path)
    record = next(run_jobs([Job("A1")], "oracle"))
    corpus.append(record)
    with pytest.raises(ValueError, match="already"):
        corpus.append(record)


def test_sigkilled_sweep_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    args = CLI + ["floor", "run", "--variants", "all", "--repeats", "4", "--batch-size", "2",
                  "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = out / "runs.jsonl"
    while proc.poll() is None:  # however slow the machine, kill it part-way
        if runs.exists() and runs.stat().st_size > 50_000:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    config = single_model_config({"name": "oracle"}, name="oracle", variants="all", repeats=4)
    planned = sorted(s.run_id for s in plan(config))
    before = len(RunCorpus(out).records())
    assert 0 < before < len(planned), "the sweep should have been killed part-way"
    result = subprocess.run(args, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    ids = [r.run_id for r in read_records(out)]
    assert len(ids) == len(set(ids)) and sorted(ids) == planned


def test_cli_run_prints_the_ladder(tmp_path: Path) -> None:
    result = subprocess.run(CLI + ["floor", "run", "--tasks", "tier:A0,E", "--out",
                                   str(tmp_path), "--no-progress"],
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert "oracle" in result.stdout and "5/5 100%" in result.stdout
    assert "10 new runs" in result.stdout


def test_cli_rejects_an_invalid_sweep_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("sweep_name: s\nmodels:\n  - name: m\n    backend: {}\n")
    result = subprocess.run(CLI + ["floor", "sweep", str(bad)], capture_output=True, text=True,
                            timeout=HANG_GUARD_S)
    assert result.returncode == 2 and "models.0.backend.name" in result.stderr


def test_example_smoke_sweep_runs(tmp_path: Path) -> None:
    config = load_sweep(Path(__file__).parents[2] / "examples" / "sweeps" / "smoke.yaml")
    outcome = run_sweep(config, tmp_path, progress=False)
    assert outcome.written == 5 and all(r.passed for r in read_records(tmp_path))


def _lazy_agent(messages: list[dict], tools: list[dict]) -> str:
    """Answers every task in plain text without calling a tool."""
    return "I believe the answer is 42."


def test_rescore_and_compare(tmp_path: Path) -> None:
    base, new = tmp_path / "base", tmp_path / "new"
    oracle = single_model_config({"name": "oracle"}, name="agent", tasks="tier:A,B")
    run_sweep(oracle, base, progress=False)
    lazy = single_model_config({"name": "oracle"}, name="lazy", tasks="tier:A,B")
    run_sweep(lazy, new, progress=False, make_agent=lambda _: _as(_lazy_agent))
    same = subprocess.run(CLI + ["floor", "compare", str(base), str(base)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert same.returncode == 0, same.stdout
    worse = subprocess.run(CLI + ["floor", "compare", str(base), str(new)],
                           capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert worse.returncode == 1 and "A1" in worse.stdout

    result = subprocess.run(CLI + ["floor", "rescore", str(base)], capture_output=True,
                            text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0 and "0 changed" in result.stdout
    tampered = [r.to_json() for r in read_records(base)]
    tampered[0]["actions"] = ["no tools needed"]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "runs.jsonl").write_text(  # changed as a tool would: digested again
        "".join(json.dumps(with_digest(r)) + "\n" for r in tampered))
    result = subprocess.run(CLI + ["floor", "rescore", str(tmp_path / "t")],
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert "1 changed" in result.stdout and tampered[0]["run_id"] in result.stdout
    rescored = read_records(tmp_path / "t" / "rescored")
    assert not rescored[0].passed and rescored[1].passed

    report = subprocess.run(CLI + ["floor", "report", str(base), str(new)], capture_output=True,
                            text=True, timeout=HANG_GUARD_S)
    assert report.returncode == 0, report.stderr
    assert (base / "report" / "report.md").read_text().count("|") > 10
    assert (base / "report" / "ladder.png").read_bytes()[:4] == b"\x89PNG"


def _as(agent: object) -> Backend:
    from floor_tasks.harness.agents import CallableBackend

    return CallableBackend(agent)


def test_pytest_plugin_asserts_on_an_agent() -> None:
    floor = AgentFloor()
    good = floor.run({"name": "oracle"}, tasks="tier:C")
    good.assert_tier_pass_rate("C", at_least=1.0)
    good.assert_passes("C3")
    bad = floor.run(_lazy_agent, tasks=["A1", "A01"])
    with pytest.raises(AssertionError, match="A1"):
        bad.assert_passes("A1")
    with pytest.raises(AssertionError):
        bad.assert_tier_pass_rate("A", at_least=0.5)


def test_each_episode_samples_with_its_own_seed() -> None:
    seeds: list[int | None] = []

    class SeedSpy(OracleBackend):
        def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            seeds.extend(r.sampling.seed for r in requests)
            assert all(r.sampling.temperature == 0.0 for r in requests)
            return super().complete(requests)

    list(run_jobs([Job("A01", seed=7), Job("A01", repeat=1, seed=8)], SeedSpy()))
    assert seeds == [7, 8]


POISON = "<<an answer the env chokes on>>"


class PoisoningOracle(OracleBackend):
    """The oracle, except that every turn of task B1 is answered with :data:`POISON`; it also
    checks that ``metadata.json`` says the sweep is running while it is asked."""

    def __init__(self, corpus: Path) -> None:
        self.corpus = corpus
        self.b1_prompts = {load_task("B1").variant(v).prompt for v in load_task("B1").variant_names}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        metadata = json.loads((self.corpus / "metadata.json").read_text())
        assert metadata["status"] == "running" and metadata["runs_planned"] == 3
        answers = super().complete(requests)
        return [Completion(text=POISON) if r.messages[1]["content"] in self.b1_prompts else a
                for r, a in zip(requests, answers, strict=True)]


@pytest.fixture
def choking_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the env raise on :data:`POISON`, as a model answer that hits an env bug would."""
    real_step = FloorEnv.step

    def step(self: FloorEnv, action: str) -> tuple:
        if action == POISON:
            raise RuntimeError("env choked on the answer")
        return real_step(self, action)

    monkeypatch.setattr(FloorEnv, "step", step)


def _errors(corpus: Path) -> list[dict]:
    return [json.loads(line) for line in (corpus / "errors.jsonl").read_text().splitlines()]


def test_a_run_that_raises_is_logged_and_the_sweep_goes_on(tmp_path: Path,
                                                            choking_env: None) -> None:
    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1", "B1", "C1"])
    outcome = run_sweep(config, tmp_path, progress=False,
                        make_agent=lambda _: PoisoningOracle(tmp_path))
    assert outcome.written == 2 and len(outcome.errors) == 1
    assert "oracle|B1|v0|0" in outcome.errors[0] and "RuntimeError" in outcome.errors[0]
    [error] = _errors(tmp_path)
    assert error["run_ids"] == ["oracle|B1|v0|0"] and error["kind"] == "run"
    assert error["error"] == "RuntimeError: env choked on the answer"
    assert "env choked on the answer" in error["traceback"]
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert (metadata["status"], metadata["runs_planned"], metadata["runs_recorded"],
            metadata["runs_failed"], metadata["errors"]) == ("incomplete", 3, 2, 1, 1)
    assert sorted(r.task_id for r in read_records(tmp_path)) == ["A1", "C1"]

    again = run_sweep(config, tmp_path, progress=False,
                      make_agent=lambda _: PoisoningOracle(tmp_path))
    assert (again.written, again.skipped, len(again.errors)) == (0, 2, 1)
    assert len(_errors(tmp_path)) == 2  # retried on resume, and logged again

    fixed = run_sweep(config, tmp_path, progress=False)
    assert (fixed.written, fixed.skipped, fixed.errors, fixed.status) == (1, 2, [], "finished")
    ids = [r.run_id for r in read_records(tmp_path)]
    assert sorted(ids) == sorted(s.run_id for s in plan(config))


def test_run_episode_still_raises_a_run_exception(choking_env: None) -> None:
    with pytest.raises(RuntimeError, match="env choked"):
        run_episode("A1", lambda messages, tools: POISON)


def test_a_backend_bug_stops_only_its_arm(tmp_path: Path) -> None:
    class Buggy(OracleBackend):
        def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            return super().complete(requests)[:-1]  # one answer short: zip(strict) raises

    config = single_model_config({"name": "oracle"}, name="oracle", tasks=["A1", "B1"])
    outcome = run_sweep(config, tmp_path, progress=False, make_agent=lambda _: Buggy())
    assert outcome.written == 0 and "ValueError" in outcome.errors[0]
    [error] = _errors(tmp_path)
    assert error["kind"] == "arm" and sorted(error["run_ids"]) == ["oracle|A1|v0|0",
                                                                   "oracle|B1|v0|0"]
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert (metadata["status"], metadata["runs_recorded"], metadata["runs_failed"]) == (
        "incomplete", 0, 2)


def test_a_reply_with_lone_surrogates_is_written_and_read_back(tmp_path: Path) -> None:
    reply = "The status is \ud800active\udfff; caf\u00e9 \U0001f600"

    def agent(messages: list[dict], tools: list[dict]) -> str:
        return reply

    config = single_model_config({"name": "oracle"}, name="surrogates", tasks=["A1"])
    outcome = run_sweep(config, tmp_path, progress=False, make_agent=lambda _: _as(agent))
    assert (outcome.written, outcome.errors) == (1, [])
    raw = (tmp_path / "runs.jsonl").read_bytes()
    assert raw.isascii() and b"\\ud800" in raw
    [record] = read_records(tmp_path)
    assert record.trajectory.actions[0] == reply
    assert any(m["role"] == "assistant" and m["content"] == reply
               for m in record.trajectory.messages)

    corpus = RunCorpus(tmp_path / "direct")
    corpus.append(record.model_copy(update={"backend": {"\udcff key": ["\udc80", reply]}}))
    assert RunCorpus(tmp_path / "direct").done_ids() == {record.run_id}
    stored = json.loads((tmp_path / "direct" / "runs.jsonl").read_text(encoding="ascii"))
    assert stored["backend"] == {"\udcff key": ["\udc80", reply]}
