"""The world-model evidence script's steps: the data step reruns after an interruption and
writes the same data, refuses a held-out MCP family that does not exist (which would hold
nothing out and train on every family) or episodes too few to hold one out, and a bad step is
a usage error (exit 2)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UnknownNameError, UsageError
from trainers.experiments.world_model_evidence import main, make_data

SPLITS = ("train/floor.jsonl", "val/floor.jsonl", "train/mcp.jsonl", "val/mcp.jsonl",
          "draft_corpus.jsonl")


def _data(out: Path) -> dict[str, str]:
    """Each split's digest (a failing comparison stays short)."""
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in SPLITS}


def _run_ids(corpus: Path) -> list[str]:
    return [json.loads(line)["run_id"] for line in corpus.read_text().splitlines()]


def test_the_data_step_rerun_after_an_interruption_writes_the_same_data(
        tmp_path: Path) -> None:
    make_data(tmp_path, explore_repeats=1, mcp_episodes=4, val_family="tickets")
    whole = _data(tmp_path)
    oracle = tmp_path / "corpora" / "oracle" / "runs.jsonl"
    runs = _run_ids(oracle)
    lines = oracle.read_text().splitlines(keepends=True)
    oracle.write_text("".join(lines[:len(lines) // 2]))  # killed while playing the oracle
    make_data(tmp_path, explore_repeats=1, mcp_episodes=4, val_family="tickets")
    assert _data(tmp_path) == whole
    assert _run_ids(oracle) == runs


def test_an_unknown_held_out_family_is_refused_before_any_data(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError, match=r"'ticket'; did you mean 'tickets'\?"):
        make_data(tmp_path, explore_repeats=1, mcp_episodes=4, val_family="ticket")
    assert not any(tmp_path.iterdir())


def test_episodes_that_hold_no_split_of_a_domain_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"1 MCP episodes gave no training transition .* "
                                         r"raise --mcp-episodes"):
        make_data(tmp_path, explore_repeats=1, mcp_episodes=1, val_family="tickets")
    assert not (tmp_path / "val" / "mcp.jsonl").exists()


@pytest.mark.parametrize("argv", [["bogus"], []])
def test_a_missing_or_unknown_step_is_a_usage_error(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(lambda: main(argv)) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "{data,train,eval,agree}" in error


def test_help_before_a_step_shows_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(lambda: main(["--help"])) == 0
    assert capsys.readouterr().out.startswith("usage: world_model_evidence.py {data,train,")


def test_eval_before_train_is_one_line_naming_the_step_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(lambda: main(["eval", "--out", str(tmp_path), "--items", "2"])) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"run the train step first (train --out {tmp_path})" in error


def test_eval_scores_the_shipped_adapter_or_a_named_folder(tmp_path: Path) -> None:
    from agentworld_envs.backends.embedded import embedded_backend
    from trainers.experiments.world_model_evidence import adapter_model
    assert adapter_model("shipped", tmp_path / "adapter") == embedded_backend("tools")
    assert adapter_model(None) == embedded_backend("tools")  # agree's default
    with pytest.raises(UsageError, match=r"no trained adapter; run the train step first "
                                         r".*or score the shipped adapter \(--adapter shipped\)"):
        adapter_model(None, tmp_path / "adapter")
    with pytest.raises(UsageError, match="no such folder"):
        adapter_model(str(tmp_path / "elsewhere"), tmp_path / "adapter")
    (tmp_path / "mine").mkdir()
    assert adapter_model(str(tmp_path / "mine"))["adapter"] == str(tmp_path / "mine")


def test_the_exact_rate_on_answers_no_training_transition_holds() -> None:
    from types import SimpleNamespace

    from trainers.experiments.world_model_evidence import unseen_answers_exact
    items = [SimpleNamespace(key=f"mcp/{i}", ground_truth=answer)
             for i, answer in enumerate(["[]", "[]", "rate limited", "TCK-1", "TCK-2", "x"])]
    records = [{"key": f"mcp/{i}", "fidelity": {"exact": exact}}
               for i, exact in enumerate([True, True, True, True, False, False])]
    found = unseen_answers_exact(records, items, seen={"[]", "rate limited"})
    assert found["items"] == 3 and found["exact"] == 33.33  # 1 of TCK-1, TCK-2, x
    assert found["exact_wilson95"] == [6.1, 79.2]
    assert unseen_answers_exact(records, items, seen={"[]", "rate limited", "TCK-1", "TCK-2",
                                                       "x"})["items"] == 0
