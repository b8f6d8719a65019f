"""A kill while Transformers saves a checkpoint: ``--resume_from_checkpoint last`` passes over
one whose ``trainer_state.json`` the kill cut, and a ``wm rl`` checkpoint cannot keep its
trainer state without its judge-fault tally.

Before, ``last`` took the cut checkpoint and the resume was refused ("trainer_state.json cannot
be read"), and a kill after ``trainer_state.json`` but before the tally's own file left a
checkpoint whose resumed run counted its judge faults from zero (and could train past
``--max-faults``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from trainers.common.args import ConfigError

pytest.importorskip("trl")

UNREADABLE_VERDICT = '<final_evaluation>\n{"strengths": []}\n</final_evaluation>'


@contextmanager
def killed_while_saving(monkeypatch: pytest.MonkeyPatch, checkpoint: str, cut: bool
                        ) -> Iterator[None]:
    """Stop the run (as a kill would) when Transformers writes ``checkpoint``'s
    ``trainer_state.json``, the last file it writes: mid-write (``cut``), or just after it."""
    from transformers.trainer_callback import TrainerState

    save = TrainerState.save_to_json

    def save_then_kill(self: TrainerState, json_path: str) -> None:
        save(self, json_path)
        if Path(json_path).parent.name != checkpoint:
            return
        if cut:
            text = Path(json_path).read_text(encoding="utf-8")
            Path(json_path).write_text(text[: len(text) // 2], encoding="utf-8")
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(TrainerState, "save_to_json", save_then_kill)
        with pytest.raises(KeyboardInterrupt):
            yield


def floor_items(tmp_path: Path, count: int) -> Path:
    return write_items([i for i in load_sample() if i.task == "floor"][:count],
                       tmp_path / "train.jsonl")


def checkpoints(tmp_path: Path, states: dict[int, str]) -> SimpleNamespace:
    """``checkpoint-N`` folders with these ``trainer_state.json`` texts; a config resuming
    ``last`` among them."""
    for step, text in states.items():
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(text)
    return SimpleNamespace(output_dir=str(tmp_path), resume_from_checkpoint="last")


def test_last_passes_over_newer_checkpoints_whose_trainer_state_was_cut(tmp_path: Path) -> None:
    from trainers.world_model.sft import resume_checkpoint

    config = checkpoints(tmp_path, {2: '{"global_step": 2}', 4: '{"global_step": 4}',
                                    6: '{"global_st', 8: ""})
    with pytest.warns(UserWarning, match="passing over checkpoint-8, checkpoint-6 in .*: "
                                         "resuming checkpoint-4") as warned:
        assert resume_checkpoint(config) == str(tmp_path / "checkpoint-4")
    assert len(warned) == 1


def test_last_with_every_checkpoint_cut_is_refused_naming_them(tmp_path: Path) -> None:
    from trainers.world_model.sft import resume_checkpoint

    config = checkpoints(tmp_path, {2: '{"glo', 4: "[1, 2"})
    with pytest.raises(ConfigError, match=r"no whole checkpoint to resume from "
                                          r"\(checkpoint-4, checkpoint-2: cut short") as refused:
        resume_checkpoint(config)
    assert "\n" not in str(refused.value)


def test_a_sft_run_killed_while_writing_its_trainer_state_resumes_from_the_checkpoint_before(
        tiny_lm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    args = SFTArgs(train=str(floor_items(tmp_path, 4)), model=str(tiny_lm_dir), threads=1)
    out = tmp_path / "sft"

    def run(**more: object) -> int:
        return train_sft(args, sft_config(
            output_dir=str(out), max_steps=4, per_device_train_batch_size=1, max_length=256,
            save_strategy="steps", save_steps=2, report_to=[], disable_tqdm=True,
            **more)).steps

    with killed_while_saving(monkeypatch, "checkpoint-4", cut=True):
        run()
    with pytest.warns(UserWarning, match="passing over checkpoint-4 .*resuming checkpoint-2"):
        assert run(resume_from_checkpoint="last") == 4
    kept = json.loads((out / "training_args.json").read_text(encoding="utf-8"))
    assert kept["resumed_from"] == str(out / "checkpoint-2")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_rl_checkpoint_killed_after_its_trainer_state_keeps_its_judge_fault_tally(
        tiny_lm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step judges 2 samples, every verdict unreadable: 4 faults by checkpoint-2, so the
    resumed run spends its budget of 5 at step 3 (before, it counted 4 of 4 and ended)."""
    import trainers.world_model.rl as rl

    judge = json.dumps({"name": "scripted",
                        "rules": [{"match": ".", "reply": UNREADABLE_VERDICT}]})
    args = rl.RLArgs(train=str(floor_items(tmp_path, 2)), model=str(tiny_lm_dir),
                     max_prompt_length=256, judge=judge, max_faults=5, threads=1)

    def run(**more: object) -> None:
        rl.train_rl(args, rl.grpo_config(
            output_dir=str(tmp_path / "rl"), max_steps=4, per_device_train_batch_size=2,
            num_generations=2, num_iterations=1, max_completion_length=4,
            save_strategy="steps", save_steps=2, report_to=[], disable_tqdm=True, **more))

    with killed_while_saving(monkeypatch, "checkpoint-2", cut=False):
        run()
    with pytest.raises(TooManyFaultsError,
                       match=r"6 of 6 judge verdicts failed .*stopped after more than 5"):
        run(resume_from_checkpoint="last")
