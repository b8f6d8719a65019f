"""A judge's verdict whose notes hold a JSON escape of a lone surrogate (``"\\ud800"``, valid
JSON but no text) is read, and the run's records are written, with U+FFFD in its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.bench.judge_parser import parse_judge_output
from agentworld_envs.cli import main

VERDICT = ('<final_evaluation>{"strengths": ["ok \\ud800"], "weaknesses": "\\udc00 late", '
           '"scores": {"format": 4}}</final_evaluation>')


def test_lone_surrogate_escapes_in_a_verdicts_notes_become_replacement_characters() -> None:
    verdict = parse_judge_output(VERDICT)
    assert (verdict.strengths, verdict.weaknesses) == (["ok \ufffd"], ["\ufffd late"])
    assert verdict.total == 4.0


def test_a_bench_run_whose_judge_writes_such_an_escape_writes_its_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    judge = json.dumps({"name": "scripted", "rules": [{"match": ".", "reply": VERDICT}]})
    out = tmp_path / "out"
    assert main(["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", judge,
                 "--out", str(out)]) == 0
    records = [json.loads(line) for line in
               (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {tuple(r["strengths"]) for r in records} == {("ok \ufffd",)}
