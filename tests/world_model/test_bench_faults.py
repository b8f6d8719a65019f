"""A run whose model calls failed writes its records but no report: the report would count the
unanswered items (``wm fidelity`` as scores of 0), and the run says that no table is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.bench.items import item_from_dict, write_items
from agentworld_envs.cli import main
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response

PERFECT = '<predicted_observation>{"n": 1}</predicted_observation>'
JUDGE = json.dumps({"name": "scripted", "rules": [
    {"match": ".", "reply": '<final_evaluation>{"scores": {"format": 5}}</final_evaluation>'}]})


def world_model(down: set[int]) -> Any:
    """Answers every item perfectly, but fails (HTTP 500) on the items in ``down``."""
    def reply(hit: int, body: dict[str, Any]) -> Reply:
        item = int(body["messages"][-1]["content"].split()[-1])
        return Reply(500, {"error": {"message": "down"}}) if item in down else Reply(
            body=chat_response(PERFECT))
    return reply


def backend(server: FakeOpenAIServer) -> str:
    """The ``--backend`` of ``server``: no retries, no key."""
    return json.dumps({"name": "openai", "model": "m", "base_url": server.base_url,
                       "max_retries": 0, "api_key_env": None})


def items_file(folder: Path) -> Path:
    return write_items([item_from_dict({
        "task": "floor", "id": i, "prompt": [f"act {i}"],
        "response": ['**Environment Observation:**\n{"n": 1}'], "current_prompt": f"act {i}",
        "system_str": "You simulate.", "turn_idx": 1, "total_turns": 1}) for i in range(2)],
        folder / "items.jsonl")


@pytest.mark.parametrize("command", [["fidelity"], ["bench", "--judge", JUDGE]])
def test_a_run_with_failed_world_model_calls_leaves_records_and_no_report(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    items, out = items_file(tmp_path), tmp_path / "out"
    out.mkdir()
    for name in ("report.md", "report.json"):  # an earlier run's, which no longer holds
        (out / name).write_text("stale")
    down: set[int] = {0}
    with FakeOpenAIServer(lambda hit, body: world_model(down)(hit, body)) as server:
        argv = ["wm", *command, str(items), "--backend", backend(server), "--batch-size", "1",
                "--out", str(out)]
        assert main(argv) == 1
        assert "1 of 2 world-model calls failed" in capsys.readouterr().err
        assert not (out / "report.md").exists() and not (out / "report.json").exists()
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert [r["output"] for r in records] == [None, PERFECT]

        down.clear()
        assert main([*argv, "--resume"]) == 0
    assert "| floor | 2 | 0 | 100.00 |" in (out / "report.md").read_text()


@pytest.mark.parametrize("command", [["fidelity"], ["bench", "--judge", JUDGE]])
def test_a_run_stopped_by_failed_calls_leaves_no_earlier_report(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run stopped early (too many failed calls) left the earlier run's ``report.json``,
    ``report.md`` and ``records.jsonl`` in ``--out``, unchanged, beside its own journal: a
    report that read as this run's."""
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    items, out = items_file(tmp_path), tmp_path / "out"
    out.mkdir()
    for name in ("report.md", "report.json", "records.jsonl"):  # an earlier, finished run's
        (out / name).write_text("earlier")
    with FakeOpenAIServer(world_model({0, 1})) as server:
        assert main(["wm", *command, str(items), "--backend", backend(server), "--batch-size",
                     "1", "--max-faults", "0", "--out", str(out)]) == 1
    assert "resume with" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["journal.jsonl"]
