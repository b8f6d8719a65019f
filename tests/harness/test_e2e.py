"""End to end: a sweep through a real ``transformers serve``, then the same model in-process.

The tiny model has random weights, so its answers are noise: these tests assert the plumbing
(requests, records, usage, determinism, replay), not the pass rate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends import BackendError
from agentworld_envs.backends.openai_compat import OpenAIBackend, probe_tool_support
from agentworld_envs.backends.replay import RecordingBackend, ReplayBackend
from floor_tasks.harness.corpus_io import read_records
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.sweep import run_sweep
from floor_tasks.harness.sweep_config import SweepConfig

pytestmark = pytest.mark.server

TASKS = ["A01", "A1", "B3", "C1"]


def _config(name: str, backend: dict) -> SweepConfig:
    return SweepConfig.model_validate({
        "sweep_name": name, "tasks": TASKS, "variants": ["v0"], "repeats": 1,
        "models": [{"name": name, "backend": backend, "max_tokens": 24}]})


def _check_records(records: list[RunRecord], model: str) -> None:
    assert sorted(r.task_id for r in records) == sorted(TASKS)
    for record in records:
        steps = record.trajectory
        assert record.model == model and steps.turns >= 1
        assert record.usage.input_tokens > 0 and record.usage.output_tokens > 0
        assert steps.termination in ("final_answer", "submitted", "step_budget_exhausted")
        assert record.verdict.passed is record.passed
        assert len(steps.raw_responses) == steps.turns


def test_sweep_through_transformers_serve(tiny_server: tuple[str, str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    base_url, model = tiny_server
    monkeypatch.setenv("TINY_KEY", "sk-secret-value")
    backend = {"name": "openai", "model": model, "base_url": base_url,
               "api_key_env": "TINY_KEY", "backoff_s": 0.01}
    outcome = run_sweep(_config("tiny-served", backend), tmp_path, progress=False)
    assert not outcome.errors, outcome.errors
    records = read_records(tmp_path)
    _check_records(records, "tiny-served")
    assert records[0].trajectory.raw_responses[0]["choices"]  # the server's verbatim JSON
    everything = (tmp_path / "runs.jsonl").read_text() + (tmp_path / "metadata.json").read_text()
    assert "sk-secret-value" not in everything and "TINY_KEY" in everything


def test_same_model_in_process_with_hf(tiny_lm_dir: Path, tmp_path: Path) -> None:
    backend = {"name": "hf", "model": str(tiny_lm_dir), "batch_size": 4}
    outcome = run_sweep(_config("tiny-hf", backend), tmp_path, progress=False)
    assert not outcome.errors, outcome.errors
    _check_records(read_records(tmp_path), "tiny-hf")
    again = run_sweep(_config("tiny-hf", backend), tmp_path / "again", progress=False)
    assert again.written == len(TASKS)
    first = {r.run_id: r.trajectory.actions for r in read_records(tmp_path)}
    second = {r.run_id: r.trajectory.actions for r in read_records(tmp_path / "again")}
    assert first == second  # greedy decoding: identical transcripts


def test_record_then_replay_is_bit_identical(tiny_server: tuple[str, str],
                                             tmp_path: Path) -> None:
    base_url, model = tiny_server
    cache = tmp_path / "cache.jsonl"
    served = OpenAIBackend(model=model, base_url=base_url, api_key_env=None)
    recorded = run_sweep(_config("m", {"name": "openai", "model": model, "base_url": base_url}),
                         tmp_path / "live", progress=False,
                         make_agent=lambda _: RecordingBackend(served, cache))
    assert not recorded.errors
    replayed = run_sweep(_config("m", {"name": "replay", "path": str(cache)}),
                         tmp_path / "replay", progress=False,
                         make_agent=lambda _: ReplayBackend(cache, model=model))
    assert not replayed.errors
    live = {r.run_id: (r.trajectory.actions, r.verdict) for r in read_records(tmp_path / "live")}
    again = {r.run_id: (r.trajectory.actions, r.verdict)
             for r in read_records(tmp_path / "replay")}
    assert live == again


def test_replay_miss_fails_clearly(tmp_path: Path) -> None:
    cache = tmp_path / "empty.jsonl"
    cache.write_text("")
    outcome = run_sweep(_config("m", {"name": "replay", "path": str(cache)}), tmp_path / "c",
                        progress=False,
                        make_agent=lambda _: ReplayBackend(cache))
    assert outcome.written == 0 and "miss" in outcome.errors[0].lower()
    logged = [json.loads(line) for line in (tmp_path / "c" / "errors.jsonl").read_text()
              .splitlines()]
    assert len(logged[0]["run_ids"]) == len(TASKS)


def test_tool_support_probe(tiny_server: tuple[str, str]) -> None:
    base_url, model = tiny_server
    backend = OpenAIBackend(model=model, base_url=base_url, api_key_env=None, max_retries=0)
    try:
        assert probe_tool_support(backend, model) in ("native", "text_leaked", "no_tools")
    except BackendError as exc:  # transformers serve answers 500 to some broken tool calls
        assert exc.status == 500 and base_url in str(exc)
    dead = OpenAIBackend(model=model, base_url="http://127.0.0.1:9/v1", api_key_env=None,
                         max_retries=0, timeout_s=2)
    with pytest.raises(BackendError, match="127.0.0.1:9"):
        probe_tool_support(dead, model)
