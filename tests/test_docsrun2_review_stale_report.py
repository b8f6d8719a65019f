"""A ``wm fidelity``/``wm bench`` run stopped early (too many failed calls) left the earlier
run's ``report.json``, ``report.md`` and ``records.jsonl`` in ``--out``, unchanged, beside its
own journal: a report that read as this run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from tests.helpers.server import FakeOpenAIServer
from tests.test_bench_review_faults import JUDGE, items_file, world_model


@pytest.mark.parametrize("command", [["fidelity"], ["bench", "--judge", JUDGE]])
def test_a_run_stopped_by_failed_calls_leaves_no_earlier_report(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    items, out = items_file(tmp_path), tmp_path / "out"
    out.mkdir()
    for name in ("report.md", "report.json", "records.jsonl"):  # an earlier, finished run's
        (out / name).write_text("earlier")
    with FakeOpenAIServer(world_model({0, 1})) as server:
        config = json.dumps({"name": "openai", "model": "m", "base_url": server.base_url,
                             "max_retries": 0, "api_key_env": None})
        assert main(["wm", *command, str(items), "--backend", config, "--batch-size", "1",
                     "--max-faults", "0", "--out", str(out)]) == 1
    assert "resume with" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["journal.jsonl"]
