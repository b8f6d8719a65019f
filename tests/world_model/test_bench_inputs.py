"""Bad input to ``wm bench``/``fidelity`` is one line naming what is wrong, with exit status 2:
an absurdly nested ``task_configs.py``, a key predicted twice, a world model given twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.bench.items import item_from_dict, write_items
from agentworld_envs.cli import main


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("template", [
    "JUDGE_USER_PROMPT = " + "a." * 100_000 + "b",  # the parser's RecursionError
    "JUDGE_USER_PROMPT = " + "-" * 200_000 + "1",  # the parser's MemoryError
])
def test_a_task_configs_nested_past_the_parser_is_one_line(
        template: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "prompts" / "mcp").mkdir(parents=True)
    (tmp_path / "prompts" / "mcp" / "judge_system_prompt.txt").write_text("Judge.")
    configs = tmp_path / "eval" / "lwm_eval_utils" / "task_configs.py"
    configs.parent.mkdir(parents=True)
    configs.write_text(template)
    assert main(["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted",
                 "--prompts", str(tmp_path)]) == 2
    assert f"cannot read '{configs}': nested too deeply to parse" in one_error(capsys)


@pytest.fixture
def items(tmp_path: Path) -> Path:
    return write_items([item_from_dict({
        "task": "floor", "id": i, "prompt": ["act"], "response": ["{}"],
        "current_prompt": "act", "system_str": "", "turn_idx": 1, "total_turns": 1})
        for i in range(2)], tmp_path / "items.jsonl")


def test_a_key_predicted_twice_is_refused_naming_the_line(
        items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    predictions = tmp_path / "records.jsonl"
    predictions.write_text("".join(json.dumps({"key": key, "output": output}) + "\n" for
                                   key, output in (("floor/0", "{}"), ("floor/1", "{}"),
                                                   ("floor/0", "other"))))
    assert main(["wm", "fidelity", str(items), "--predictions", str(predictions)]) == 2
    assert one_error(capsys) == (f"agentworld: error: {predictions}:3: a second prediction "
                                 "for floor/0\n")


def test_a_backend_and_predictions_together_are_refused(
        items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    predictions = tmp_path / "records.jsonl"
    predictions.write_text('{"key": "floor/0", "output": "{}"}\n'
                           '{"key": "floor/1", "output": "{}"}\n')
    assert main(["wm", "fidelity", str(items), "--predictions", str(predictions),
                 "--backend", "scripted"]) == 2
    assert "--backend (run the world model) or --predictions" in one_error(capsys)


def test_load_items_keeps_the_domains_asked_for_as_the_release_reads_them(
        tmp_path: Path) -> None:
    from agentworld_envs.bench.items import load_items

    path = write_items([item_from_dict({
        "task": task, "id": 0, "prompt": ["act"], "response": ["{}"], "current_prompt": "act",
        "system_str": "", "turn_idx": 1, "total_turns": 1})
        for task in ("agentworld/mcp", "agentworld/search", "mcp")], tmp_path / "items.jsonl")
    assert [item.task for item in load_items(path, domains=["mcp"])] == ["agentworld/mcp",
                                                                          "mcp"]


def test_a_refused_resume_prints_its_error_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted",
                 "--out", str(tmp_path / "none"), "--resume"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "holds no journal.jsonl" in captured.err
