"""Synthetic run records, for tests of the readers of run corpora."""

from __future__ import annotations

from typing import Any

from floor_tasks.harness.record import RunRecord


def record_json(task_id: str, tier: str, passed: bool, model: str = "m", repeat: int = 0,
                **fields: Any) -> dict[str, Any]:
    """A run record's JSON form (variant v0, an empty conversation, no tokens); ``fields``
    replace its fields by name, as a corpus line spells them."""
    return {
        "schema_version": 1, "run_id": f"{model}|{task_id}|v0|{repeat}", "model": model,
        "backend": {"name": "synthetic"}, "task_id": task_id, "tier": tier, "variant": "v0",
        "repeat": repeat, "seed": 0,
        "settings": {"system_prompt_sha256": "0" * 64, "sampling": {}, "max_steps": None},
        "messages": [], "actions": [], "call_log": [], "raw_responses": [],
        "termination": "final_answer", "final_text": None, "turns": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        "latency_s": 0.0, "wall_s": 0.0, "passed": passed,
        "verdict": {"passed": passed, "checks": {}, "failure_labels": [],
                    "failure_class": None if passed else "F5"},
        "timestamp_utc": "2026-12-01T00:00:00+00:00", **fields}


def synthetic_record(task_id: str, tier: str, passed: bool, model: str = "m", repeat: int = 0,
                     **fields: Any) -> RunRecord:
    """The :class:`RunRecord` of :func:`record_json`."""
    return RunRecord.from_json(record_json(task_id, tier, passed, model, repeat, **fields))
