"""``wm sft`` and ``wm rl`` resume a checkpoint only with the settings it was trained with.

Before, a resume with other data, another learning rate, seed or batch size went on silently
(ending with other weights than an uninterrupted run, which the docs promise), and one with a
LoRA adapter added ended in a raw optimizer traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from trainers.common.args import ConfigError

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

SFT = {"max_steps": 2, "per_device_train_batch_size": 1, "learning_rate": 1e-2,
       "warmup_steps": 1, "max_length": 256, "logging_steps": 1, "save_strategy": "steps",
       "save_steps": 1, "report_to": [], "disable_tqdm": True}
RL = {"max_steps": 2, "per_device_train_batch_size": 2, "num_generations": 2,
      "num_iterations": 1, "max_completion_length": 4, "learning_rate": 1e-2,
      "save_strategy": "steps", "save_steps": 1, "report_to": [], "disable_tqdm": True}
JUDGE = json.dumps({"name": "scripted", "rules": [{"match": ".", "reply": "no verdict"}]})


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    floor = [i for i in load_sample() if i.task == "floor"]
    folder = tmp_path_factory.mktemp("wm_data")
    return {"train": write_items(floor[:4], folder / "train.jsonl"),
            "other": write_items(floor[4:8], folder / "other.jsonl")}


def weights(folder: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder).state_dict()


def copied_checkpoint(whole: Path, out: Path) -> Path:
    """``whole``'s step-1 checkpoint, copied into a fresh output folder ``out``."""
    shutil.copytree(whole / "checkpoint-1", out / "checkpoint-1")
    return out


def sft(out: Path, args: dict[str, Any], **config: Any) -> None:
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    train_sft(SFTArgs(**args), sft_config(output_dir=str(out), **{**SFT, **config}))


@pytest.fixture(scope="module")
def sft_args(tiny_lm_dir: Path, data: dict[str, Path]) -> dict[str, Any]:
    return {"train": str(data["train"]), "model": str(tiny_lm_dir), "threads": 1}


@pytest.fixture(scope="module")
def sft_whole(sft_args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted 2-step SFT run, with a checkpoint after step 1."""
    out = tmp_path_factory.mktemp("sft") / "whole"
    sft(out, sft_args)
    return out


@pytest.fixture
def no_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test when a model loads (a refused resume loads none)."""
    import trainers.world_model.rl as rl
    import trainers.world_model.sft as sft_module

    def loaded(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model loaded")

    monkeypatch.setattr(sft_module, "prepare_model", loaded)
    monkeypatch.setattr(rl, "load_model", loaded)


@pytest.mark.parametrize(("ours", "config", "named"), [
    ({"train": "other"}, {}, "train: 'sha256:"),
    ({}, {"learning_rate": 5e-2}, "learning_rate: 0.01 -> 0.05"),
    ({}, {"seed": 7}, "seed: 0 -> 7"),
    ({}, {"per_device_train_batch_size": 2}, "per_device_train_batch_size: 1 -> 2"),
    ({"lora_rank": 4}, {}, "lora_rank: 0 -> 4"),
    ({"max_minutes": 5.0}, {}, "max_minutes: 0.0 -> 5.0"),
], ids=["data", "learning rate", "seed", "batch size", "LoRA", "time budget"])
def test_sft_refuses_a_resume_with_other_settings_before_any_model_loads(
        ours: dict[str, Any], config: dict[str, Any], named: str, sft_args: dict[str, Any],
        data: dict[str, Path], sft_whole: Path, tmp_path: Path, no_model_loads: None) -> None:
    resumed = copied_checkpoint(sft_whole, tmp_path / "resumed")
    changed = {**sft_args, **{k: str(data[v]) if k == "train" else v for k, v in ours.items()}}
    with pytest.raises(ConfigError, match="resume_from_checkpoint") as refused:
        sft(resumed, changed, resume_from_checkpoint="last", **config)
    assert named in str(refused.value) and str(refused.value).count(" -> ") == 1
    assert not (resumed / "model.safetensors").exists()


def test_sft_resumes_with_moved_data_and_other_logging_and_saving_as_an_unstopped_run(
        sft_args: dict[str, Any], data: dict[str, Path], sft_whole: Path,
        tmp_path: Path) -> None:
    moved = shutil.copy(data["train"], tmp_path / "moved.jsonl")
    resumed = copied_checkpoint(sft_whole, tmp_path / "resumed")
    sft(resumed, {**sft_args, "train": str(moved)}, resume_from_checkpoint="last",
        logging_steps=2, save_steps=5, report_to=["tensorboard"])
    end, again = weights(sft_whole), weights(resumed)
    assert [k for k in end if not torch.equal(end[k], again[k])] == []
    kept = json.loads((sft_whole / "run_settings.json").read_text(encoding="utf-8"))
    assert json.loads((resumed / "run_settings.json").read_text(encoding="utf-8")) == kept
    assert kept["learning_rate"] == 0.01 and kept["train"].startswith("sha256:")
    assert "output_dir" not in kept and "logging_steps" not in kept


def test_a_checkpoint_saved_without_its_settings_resumes_with_a_warning(
        sft_args: dict[str, Any], sft_whole: Path, tmp_path: Path) -> None:
    resumed = copied_checkpoint(sft_whole, tmp_path / "resumed")
    state_file = resumed / "checkpoint-1" / "trainer_state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["stateful_callbacks"].pop("KeptSettings", None)  # as an older agentworld saved it
    state_file.write_text(json.dumps(state), encoding="utf-8")
    with pytest.warns(UserWarning, match="cannot be checked") as warned:
        sft(resumed, sft_args, resume_from_checkpoint="last", learning_rate=5e-2)
    assert [str(w.message).count("\n") for w in warned if "cannot be" in str(w.message)] == [0]
    assert (resumed / "model.safetensors").is_file()


def test_the_cli_refuses_a_resume_with_a_lora_adapter_added_in_one_line(
        sft_args: dict[str, Any], sft_whole: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``ValueError: loaded state dict contains a parameter group that doesn't match
    the size of optimizer's group``, a traceback from the optimizer's state."""
    from agentworld_envs.cli import main

    resumed = copied_checkpoint(sft_whole, tmp_path / "resumed")
    flags = [f"--{k}={v}" for k, v in SFT.items() if k != "report_to"]
    status = main(["wm", "sft", "--train", sft_args["train"], "--model", sft_args["model"],
                   "--threads", "1", "--lora-rank", "4", *flags, "--report_to", "none",
                   "--output_dir", str(resumed), "--resume_from_checkpoint", "last"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "(lora_rank: 0 -> 4)" in err[0]


def test_an_unreadable_trainer_state_is_refused_in_one_line(tmp_path: Path) -> None:
    from trainers.world_model.budget import keep_settings

    checkpoint = tmp_path / "checkpoint-3"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text('{"global_step": 3,', encoding="utf-8")
    with pytest.raises(ConfigError, match="trainer_state.json cannot be read"):
        keep_settings(str(checkpoint), {"seed": 0})


def rl(out: Path, args: dict[str, Any], **config: Any) -> None:
    from trainers.world_model.rl import RLArgs, grpo_config, train_rl

    train_rl(RLArgs(**args), grpo_config(output_dir=str(out), **{**RL, **config}))


@pytest.fixture(scope="module")
def rl_args(tiny_lm_dir: Path, data: dict[str, Path]) -> dict[str, Any]:
    return {"train": str(data["train"]), "model": str(tiny_lm_dir), "max_prompt_length": 256,
            "threads": 1}


@pytest.fixture(scope="module")
def rl_whole(rl_args: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted 2-step RL run, with a checkpoint after step 1."""
    out = tmp_path_factory.mktemp("rl") / "whole"
    rl(out, rl_args)
    return out


@pytest.mark.parametrize(("ours", "config", "named"), [
    ({"judge": JUDGE}, {}, "reward_weights: [1.0] -> [0.7, 0.3]"),
    ({"max_prompt_length": 128}, {}, "max_prompt_length: 256 -> 128"),
    ({}, {"temperature": 0.5}, "temperature: 1.0 -> 0.5"),
], ids=["judge", "prompt length", "temperature"])
def test_rl_refuses_a_resume_with_other_settings_before_any_model_loads(
        ours: dict[str, Any], config: dict[str, Any], named: str, rl_args: dict[str, Any],
        rl_whole: Path, tmp_path: Path, no_model_loads: None) -> None:
    resumed = copied_checkpoint(rl_whole, tmp_path / "resumed")
    with pytest.raises(ConfigError, match="resume_from_checkpoint") as refused:
        rl(resumed, {**rl_args, **ours}, resume_from_checkpoint="last", **config)
    assert named in str(refused.value)
    if "judge" in ours:
        assert "judge: " in str(refused.value)


def test_rl_resumes_with_another_fault_limit_and_output_folder(
        rl_args: dict[str, Any], rl_whole: Path, tmp_path: Path) -> None:
    resumed = copied_checkpoint(rl_whole, tmp_path / "resumed")
    rl(resumed, {**rl_args, "max_faults": 0}, resume_from_checkpoint="last", logging_steps=2)
    end, again = weights(rl_whole), weights(resumed)
    assert [k for k in end if not torch.equal(end[k], again[k])] == []
    assert json.loads((resumed / "run_settings.json").read_text(encoding="utf-8")) == \
        json.loads((rl_whole / "run_settings.json").read_text(encoding="utf-8"))
