"""``wm rl`` says so when GRPO learned nothing: every group's samples scored alike."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main

pytest.importorskip("trl")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_run_whose_groups_all_tie_saves_and_exits_non_zero_saying_so(
        tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``saved OUT``, exit 0, after steps of loss 0 and grad_norm 0."""
    import trainers.world_model.rl as rl

    @functools.wraps(rl.rule_reward)
    def tied(completions: list[str], **_: Any) -> list[float]:
        return [0.5] * len(completions)

    monkeypatch.setattr(rl, "rule_reward", tied)
    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")
    out = tmp_path / "rl"
    assert main(["wm", "rl", "--train", str(train), "--model", str(tiny_lm_dir),
                 "--max-prompt-length", "256", "--threads", "1", "--output_dir", str(out),
                 "--max_steps", "1", "--per_device_train_batch_size", "4", "--num_generations",
                 "2", "--num_iterations", "1", "--max_completion_length", "4",
                 "--report_to", "none", "--disable_tqdm", "true"]) == 1
    captured = capsys.readouterr()
    assert f"saved {out}" in captured.out and (out / "config.json").is_file()
    last = captured.err.splitlines()[-1]  # after the loading bars
    assert last.startswith("agentworld: error: every step's groups of samples scored alike")
    assert "GRPO learned nothing" in last


def test_one_group_that_differs_is_learning() -> None:
    from trainers.world_model.rl import RLResult

    assert RLResult("o", [{"frac_reward_zero_std": 1.0}, {"frac_reward_zero_std": 0.5}]).learned
    assert not RLResult("o", [{"frac_reward_zero_std": 1.0}] * 2).learned
