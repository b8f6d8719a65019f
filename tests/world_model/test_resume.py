"""``--resume_from_checkpoint`` in ``wm sft`` and ``wm rl``: a resumed run makes only the
remaining steps and ends with the weights of an uninterrupted run, from a checkpoint in a later
epoch too, and ``last`` passes over a checkpoint a kill cut short."""

from __future__ import annotations

import functools
import json
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


def resumed_from_step_2(run: Any, tmp_path: Path) -> Path:
    """``run(out)`` for 4 steps, and again from a copy of its step-2 checkpoint (``last``);
    checks that the steps after the checkpoint moved the weights, and that both runs end with
    the same ones (bit for bit: one CPU thread, and the checkpoint keeps the RNG states)."""
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    run(whole)
    shutil.copytree(whole / "checkpoint-2", resumed / "checkpoint-2")
    run(resumed, resume_from_checkpoint="last")
    middle, end, again = (weights(path) for path in (whole / "checkpoint-2", whole, resumed))
    assert any(not torch.equal(middle[k], end[k]) for k in end)
    assert all(torch.equal(end[k], again[k]) for k in end)
    return resumed


@pytest.mark.parametrize("minutes", [0.0, 60.0], ids=["TRL's schedule", "our time budget"])
def test_a_resumed_sft_run_makes_only_the_remaining_steps_and_ends_as_an_unstopped_one(
        minutes: float, tiny_lm_dir: Path, train_file: Path, tmp_path: Path) -> None:
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    args = SFTArgs(train=str(train_file), model=str(tiny_lm_dir), threads=1,
                   max_minutes=minutes)  # 60 minutes: the step budget runs out first
    steps: dict[str, list[int]] = {}

    def run(out: Path, **more: Any) -> None:
        config = sft_config(output_dir=str(out), max_steps=4, per_device_train_batch_size=1,
                            learning_rate=1e-2, warmup_steps=1, max_length=256,
                            logging_steps=1, save_strategy="steps", save_steps=2,
                            report_to=[], **more)
        steps[out.name] = []
        train_sft(args, config, log=lambda step, loss: steps[out.name].append(step))

    resumed = resumed_from_step_2(run, tmp_path)
    assert steps == {"whole": [1, 2, 3, 4], "resumed": [3, 4]}  # mid-epoch: 4 items, 1 a step
    saved = json.loads((resumed / "training_args.json").read_text())
    assert saved["resumed_from"] == str(resumed / "checkpoint-2") and saved["steps_done"] == 4
    assert [step for step, _ in saved["losses"]] == [1, 2, 3, 4]
    if minutes:  # the checkpoint keeps the training time spent, for the rest of the budget
        state = json.loads((resumed / "checkpoint-2" / "trainer_state.json").read_text())
        assert state["stateful_callbacks"]["TrainingBudget"]["attributes"]["spent"] > 0


def test_the_time_budget_goes_on_from_the_time_a_checkpoint_spent() -> None:
    from trainers.world_model.budget import TrainingBudget

    budget = TrainingBudget(steps=10**6, minutes=1.0, warmup=0)
    saved = {"TrainingBudget": {"args": {}, "attributes": {"spent": 60.0}}}
    budget.on_train_begin(None, SimpleNamespace(stateful_callbacks=saved), None)
    control = SimpleNamespace(should_training_stop=False)
    budget.on_step_end(None, SimpleNamespace(global_step=1), control)
    assert control.should_training_stop and budget.state()["attributes"]["spent"] >= 60.0


def test_a_resumed_rl_run_makes_only_the_remaining_steps_and_ends_as_an_unstopped_one(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import trainers.world_model.rl as rl
    from trainers.world_model.rewards import rule_reward

    calls: list[int] = []

    @functools.wraps(rule_reward)
    def counted(*args: Any, **kwargs: Any) -> list[float]:
        """The rule reward, counting its calls; every other sample's is raised, so that the
        two samples of each group differ and the policy moves."""
        calls.append(1)
        return [r + 0.1 * (k % 2) for k, r in enumerate(rule_reward(*args, **kwargs))]

    monkeypatch.setattr(rl, "rule_reward", counted)
    args = rl.RLArgs(train=str(train_file), model=str(tiny_lm_dir), max_prompt_length=256,
                     threads=1)
    made: dict[str, int] = {}

    def run(out: Path, **more: Any) -> None:
        calls.clear()
        rl.train_rl(args, rl.grpo_config(
            output_dir=str(out), max_steps=4, per_device_train_batch_size=2,
            num_generations=2, num_iterations=1, max_completion_length=8, learning_rate=1e-2,
            save_strategy="steps", save_steps=2, report_to=[], **more))
        made[out.name] = len(calls)  # one reward call a step

    resumed = resumed_from_step_2(run, tmp_path)
    assert made == {"whole": 4, "resumed": 2}
    assert json.loads((resumed / "rl_args.json").read_text())["resumed_from"] == \
        str(resumed / "checkpoint-2")


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
