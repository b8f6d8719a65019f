"""``wm bench --resume``: an interrupted or fault-stopped run goes on from its journal, asking
the world model and the judge only for what it lacks, and ends as an uninterrupted run."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import BackendError, ChatRequest, Completion, register_backend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.bench.items import item_from_dict, write_items
from agentworld_envs.bench.journal import JOURNAL
from agentworld_envs.cli import main

N = 6
GARBLED = 1  # the judge's verdict on this item is never readable: failed after 3 attempts
GARBLED_STATUS = 1  # which ends a finished run with status 1 (its records written)


def verdict(score: int) -> str:
    scores = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), score)
    return f"<final_evaluation>{json.dumps({'scores': scores})}</final_evaluation>"


class Recorded(ScriptedBackend):
    """The scripted backend, keeping which items it was asked about (``act N`` in the last
    user message) in ``asked``; asked about item ``fail``, it fails (``"fault"``) or is
    interrupted (``"ctrl-c"``), as ``how`` says."""

    asked: list[int]
    fail: int | None = None
    how = "fault"

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        for request in requests:
            item = int(re.findall(r"act (\d+)", request.messages[-1]["content"])[-1])
            self.asked.append(item)
            if item == self.fail:
                if self.how == "ctrl-c":
                    raise KeyboardInterrupt
                raise BackendError("judge down")
        return super().complete(requests)


class WorldModel(Recorded):
    asked: list[int] = []


class Judge(Recorded):
    asked: list[int] = []


register_backend("resume_test_world_model", WorldModel)
register_backend("resume_test_judge", Judge)
JUDGE = json.dumps({"name": "resume_test_judge", "rules": [
    {"match": f"act {GARBLED}\\b", "reply": "garbled"},
    {"match": "act [0-2]\\b", "reply": verdict(5)},
    {"match": ".", "reply": verdict(3)}]})


@pytest.fixture
def items_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("AGENTWORLD_PROMPTS", raising=False)
    for backend in (WorldModel, Judge):
        monkeypatch.setattr(backend, "asked", [])
        monkeypatch.setattr(backend, "fail", None)
    return write_items([item_from_dict({
        "task": "floor", "id": i, "prompt": [f"### Turn 1\n\n**Action:**\nact {i}"],
        "response": [f'**Environment Observation:**\n{{"n": {i}}}'],
        "current_prompt": f"### Turn 1\n\n**Action:**\nact {i}", "system_str": "You simulate.",
        "turn_idx": 1, "total_turns": 1}) for i in range(N)], tmp_path / "items.jsonl")


def bench(items: Path, out: Path, *more: str) -> int:
    return main(["wm", "bench", str(items), "--backend", "resume_test_world_model",
                 "--judge", JUDGE, "--batch-size", "1", "--max-faults", "0", "--seed", "7",
                 "--out", str(out), *more])


def journal_keys(out: Path) -> tuple[list[str], list[str]]:
    """The keys of the journal's outputs and of its judge results, in order."""
    entries = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()[1:]]
    return ([e["key"] for e in entries if "output" in e],
            [e["key"] for e in entries if "judge" in e])


def keys(numbers: Sequence[int]) -> list[str]:
    return [f"floor/{i}" for i in numbers]


# (who stops the run, at which item, how; its exit status; the judge results it settled)
STOPS = {
    "a judge fault": (Judge, 3, "fault", 1, [0, 2]),
    "Ctrl-C in the judge": (Judge, 4, "ctrl-c", 130, [0, 2, 3]),
    "Ctrl-C in the world model": (WorldModel, 3, "ctrl-c", 130, []),
}


@pytest.mark.parametrize("stop", STOPS)
def test_a_stopped_run_resumes_asking_only_for_what_it_lacks_and_ends_as_an_unstopped_one(
        stop: str, items_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert bench(items_file, tmp_path / "whole") == GARBLED_STATUS
    assert not (tmp_path / "whole" / JOURNAL).exists()  # a finished run leaves its records only
    capsys.readouterr()

    backend, item, how, status, settled = STOPS[stop]
    monkeypatch.setattr(backend, "fail", item)
    monkeypatch.setattr(backend, "how", how)
    out = tmp_path / "stopped"
    assert bench(items_file, out) == status
    err = capsys.readouterr().err
    assert f"kept in {out / JOURNAL}; resume with: " in err and err.endswith(" --resume\n")
    generated = list(range(N)) if backend is Judge else list(range(item))
    assert journal_keys(out) == (keys(generated), keys(settled))
    assert not (out / "records.jsonl").exists()

    monkeypatch.setattr(backend, "fail", None)
    WorldModel.asked.clear()
    Judge.asked.clear()
    assert bench(items_file, out, "--resume") == GARBLED_STATUS
    assert WorldModel.asked == [i for i in range(N) if i not in generated]
    unsettled = [i for i in range(N) if i not in settled]
    assert sorted(Judge.asked) == sorted(unsettled + [GARBLED] * 2)  # its 3 attempts
    for name in ("records.jsonl", "report.json", "report.md"):
        assert (out / name).read_text() == (tmp_path / "whole" / name).read_text(), name
    assert not (out / JOURNAL).exists()


def test_a_cut_last_line_is_not_done_and_a_doubled_key_or_other_settings_are_refused(
        items_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(WorldModel, "fail", 3)
    monkeypatch.setattr(WorldModel, "how", "ctrl-c")
    assert bench(items_file, out) == 130
    assert bench(items_file, out) == 2  # a fresh run would lose the journal
    assert "pass --resume to go on with it" in capsys.readouterr().err
    journal = out / JOURNAL
    whole = journal.read_text()
    monkeypatch.setattr(WorldModel, "fail", None)
    WorldModel.asked.clear()

    for more, message in ((["--temperature", "0.7"], "differ from the journal's in sampling"),
                          (["--judge", "resume_test_judge"], "differ from the journal's in judge"),
                          (["--max-retries", "2"], "in max_retries")):
        assert bench(items_file, out, "--resume", *more) == 2
        assert message in capsys.readouterr().err
    doubled = whole + whole.splitlines(keepends=True)[-1]
    journal.write_text(doubled)
    assert bench(items_file, out, "--resume") == 2
    assert f"{journal}:5: floor/2 is in the journal twice" in capsys.readouterr().err
    assert WorldModel.asked == [] and journal.read_text() == doubled  # refused: nothing done

    journal.write_text(whole + json.dumps({"key": "floor/3", "output": "cut"})[:20])
    assert bench(items_file, out, "--resume") == GARBLED_STATUS
    assert WorldModel.asked == [3, 4, 5]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [r["key"] for r in records] == keys(range(N)) and "cut" not in records[3]["output"]


def test_resume_needs_an_unfinished_run_in_out(items_file: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert bench(items_file, tmp_path / "none", "--resume") == 2
    assert "holds no journal.jsonl" in capsys.readouterr().err
    assert main(["wm", "fidelity", str(items_file), "--backend", "scripted", "--resume"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err
    assert WorldModel.asked == [] and not (tmp_path / "none").exists()


def test_fidelity_resumes_from_its_journal_too(items_file: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["wm", "fidelity", str(items_file), "--backend", "resume_test_world_model",
            "--batch-size", "1", "--seed", "7", "--out"]
    assert main([*argv, str(tmp_path / "whole")]) == 0
    monkeypatch.setattr(WorldModel, "fail", 3)
    monkeypatch.setattr(WorldModel, "how", "ctrl-c")
    out = tmp_path / "stopped"
    assert main([*argv, str(out)]) == 130
    monkeypatch.setattr(WorldModel, "fail", None)
    WorldModel.asked.clear()
    assert main([*argv, str(out), "--resume"]) == 0
    assert WorldModel.asked == [3, 4, 5]
    for name in ("records.jsonl", "report.json"):
        assert (out / name).read_text() == (tmp_path / "whole" / name).read_text(), name
