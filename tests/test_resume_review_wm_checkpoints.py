"""``wm sft`` and ``wm rl`` resumed from a checkpoint in a later epoch end as an uninterrupted
run, and ``--resume_from_checkpoint last`` passes over a checkpoint a kill cut short."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    floor = [i for i in load_sample() if i.task == "floor"][:4]
    return write_items(floor, tmp_path_factory.mktemp("wm") / "train.jsonl")


def weights(folder: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder).state_dict()


def assert_resumed_from_step_5_ends_as_whole(run: Any, tmp_path: Path) -> None:
    """4 rows, one a step: step 5 is the first of the second epoch, whose order a resumed run
    must draw as the uninterrupted one did, to skip the row its checkpoint had trained."""
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run(whole)
    shutil.copytree(whole / "checkpoint-5", resumed / "checkpoint-5")
    run(resumed, resume_from_checkpoint="last")
    end, again = weights(whole), weights(resumed)
    assert [k for k in end if not torch.equal(end[k], again[k])] == []


def test_sft_resumed_in_a_later_epoch_ends_as_an_uninterrupted_run(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path) -> None:
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    args = SFTArgs(train=str(train_file), model=str(tiny_lm_dir), threads=1)

    def run(out: Path, **more: Any) -> None:  # the default length-grouped order
        train_sft(args, sft_config(
            output_dir=str(out), max_steps=8, per_device_train_batch_size=1,
            learning_rate=1e-2, warmup_steps=1, max_length=256, save_strategy="steps",
            save_steps=5, report_to=[], **more))

    assert_resumed_from_step_5_ends_as_whole(run, tmp_path)


def test_rl_resumed_in_a_later_epoch_ends_as_an_uninterrupted_run(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import trainers.world_model.rl as rl
    from trainers.world_model.rewards import rule_reward

    @functools.wraps(rule_reward)
    def varied(*args: Any, **kwargs: Any) -> list[float]:
        """Every other sample's reward raised, so that each group's samples differ."""
        return [r + 0.1 * (k % 2) for k, r in enumerate(rule_reward(*args, **kwargs))]

    monkeypatch.setattr(rl, "rule_reward", varied)
    args = rl.RLArgs(train=str(train_file), model=str(tiny_lm_dir), max_prompt_length=256,
                     threads=1)

    def run(out: Path, **more: Any) -> None:  # one item (two samples) a step
        rl.train_rl(args, rl.grpo_config(
            output_dir=str(out), max_steps=6, per_device_train_batch_size=2,
            num_generations=2, num_iterations=1, max_completion_length=8, learning_rate=1e-2,
            save_strategy="steps", save_steps=5, report_to=[], **more))

    assert_resumed_from_step_5_ends_as_whole(run, tmp_path)


def test_last_passes_over_a_checkpoint_cut_short_while_saving(tmp_path: Path) -> None:
    from trainers.common.args import ConfigError
    from trainers.world_model.sft import resume_checkpoint

    for step in (2, 9, 10, 12):
        (tmp_path / f"checkpoint-{step}").mkdir()
    for step in (2, 9, 10):  # trainer_state.json is the last file Transformers writes
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    config = SimpleNamespace(output_dir=str(tmp_path), resume_from_checkpoint="last")
    assert resume_checkpoint(config) == str(tmp_path / "checkpoint-10")
    named = SimpleNamespace(output_dir=str(tmp_path),
                            resume_from_checkpoint=str(tmp_path / "checkpoint-12"))
    with pytest.raises(ConfigError, match="checkpoint-12 is not a checkpoint folder"):
        resume_checkpoint(named)
