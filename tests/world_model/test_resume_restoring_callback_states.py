"""``restore_callback_states_from_checkpoint`` leaves a resumed run its own time budget, settings
and fault tally: Transformers would replace the budget and settings with ones rebuilt from the
checkpoint (the learning rate then followed the steps alone, and a new ``--max-minutes`` went
unused), and warned that the tally was ignored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from tests.world_model.test_resume import resumed_from_step_2

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    floor = [i for i in load_sample() if i.task == "floor"][:4]
    return write_items(floor, tmp_path_factory.mktemp("wm") / "train.jsonl")


@pytest.fixture
def minute_a_step(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A clock for the time budget that moves a minute each time a step's loss is logged."""
    import trainers.world_model.budget as budget

    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(budget, "time", SimpleNamespace(perf_counter=lambda: clock.now))

    def tick(step: int, loss: float) -> None:
        clock.now += 60.0

    return tick


def sft_run(train_file: Path, tiny_lm_dir: Path, tick: Any, out: Path, minutes: float,
            max_steps: int, **more: Any) -> Any:
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    config = sft_config(output_dir=str(out), max_steps=max_steps, per_device_train_batch_size=1,
                        learning_rate=1e-2, warmup_steps=0, max_length=256, logging_steps=1,
                        save_strategy="steps", save_steps=2, report_to=[], disable_tqdm=True,
                        **more)
    return train_sft(SFTArgs(train=str(train_file), model=str(tiny_lm_dir), threads=1,
                             max_minutes=minutes), config, log=tick)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_learning_rate_of_a_restored_run_follows_the_time_budget(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path, minute_a_step: Any) -> None:
    """Before, the schedule read a budget that Transformers had replaced, never started: its
    rate after the checkpoint followed the 100 steps, not the 4 minutes, and the weights
    differed from the uninterrupted run's."""
    steps: dict[str, int] = {}

    def run(out: Path, **more: Any) -> None:
        steps[out.name] = sft_run(train_file, tiny_lm_dir, minute_a_step, out, 4.0, 100,
                                  restore_callback_states_from_checkpoint=True, **more).steps

    resumed_from_step_2(run, tmp_path)  # the same weights as the uninterrupted run
    assert steps == {"whole": 5, "resumed": 5}  # stopped by the 4 minutes


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_restored_run_trains_for_the_minutes_it_is_given(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path, minute_a_step: Any) -> None:
    """Before, it kept the checkpoint's 3 minutes: it stopped at step 4 of 8, and wrote 3 as
    its ``max_minutes``."""
    first, resumed = tmp_path / "first", tmp_path / "resumed"
    assert sft_run(train_file, tiny_lm_dir, minute_a_step, first, 3.0, 8).steps == 4
    shutil.copytree(first / "checkpoint-2", resumed / "checkpoint-2")
    result = sft_run(train_file, tiny_lm_dir, minute_a_step, resumed, 60.0, 8,
                     resume_from_checkpoint="last", restore_callback_states_from_checkpoint=True)
    assert result.steps == 8
    assert json.loads((resumed / "run_settings.json").read_text())["max_minutes"] == 60.0


def test_a_restored_rl_run_does_not_say_it_ignores_the_fault_tally(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, Transformers warned that it ignored the checkpoint's ``fault_tally`` (which
    :class:`~trainers.world_model.budget.KeptTally` takes back itself)."""
    import transformers.trainer

    import trainers.world_model.rl as rl

    warned: list[str] = []
    monkeypatch.setattr(transformers.trainer.logger, "warning",
                        lambda message, *args, **kwargs: warned.append(str(message)))
    args = rl.RLArgs(train=str(train_file), model=str(tiny_lm_dir), max_prompt_length=256,
                     threads=1)

    def run(**more: Any) -> None:
        rl.train_rl(args, rl.grpo_config(
            output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2,
            num_generations=2, num_iterations=1, max_completion_length=4, save_strategy="steps",
            save_steps=1, report_to=[], disable_tqdm=True, **more))

    run()
    shutil.rmtree(tmp_path / "checkpoint-2")
    run(resume_from_checkpoint="last", restore_callback_states_from_checkpoint=True)
    assert not [message for message in warned if "fault_tally" in message]
