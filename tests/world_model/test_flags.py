"""Bad ``wm sft`` / ``wm rl`` flags are refused in one line (exit 2) before any model loads:
a ``--model`` that is no model folder or has no chat template, a length below 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main

pytest.importorskip("trl")


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a model fails the test."""
    import transformers

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


def refused(command: str, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            *flags: str) -> str:
    """The one error line of ``wm COMMAND`` on two floor items (asserting exit 2)."""
    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")
    assert main(["wm", command, "--train", str(train), "--model", str(model), "--output_dir",
                 str(tmp_path / "out"), "--threads", "1", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("command", ["sft", "rl"])
@pytest.mark.parametrize("model", ["missing", "empty"])
def test_a_model_that_is_no_model_folder_is_refused(
        command: str, model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_model: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: exit 1 with Hugging Face's ``Repo id must be in the form 'repo_name'...`` (a
    missing folder) or a multi-line tokenizer-conversion error (an empty one), for ``rl``
    after the judge was built."""
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        transformers.AutoModelForCausalLM.from_pretrained)
    (tmp_path / "empty").mkdir()
    folder = tmp_path / model
    err = refused(command, folder, tmp_path, capsys)
    assert f"model: {folder} is not a local model folder (it has no config.json)" in err


@pytest.mark.parametrize("command", ["sft", "rl"])
def test_a_model_without_a_chat_template_is_refused(
        command: str, tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_model: None) -> None:
    """Before: exit 1 with a traceback ending in transformers' ``ValueError: Cannot use chat
    template functions...`` (for ``rl``, after the model had loaded)."""
    plain = Path(shutil.copytree(tiny_lm_dir, tmp_path / "plain"))
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    settings = json.loads((plain / "tokenizer_config.json").read_text())
    settings.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(settings))
    assert f"model: {plain} has no chat template" in refused(command, plain, tmp_path, capsys)


@pytest.mark.parametrize(("command", "flag", "value"), [
    ("sft", "--max_length", "0"), ("sft", "--max_length", "-5"),
    ("rl", "--max_completion_length", "0")])
def test_a_length_below_one_is_refused(command: str, flag: str, value: str, tiny_lm_dir: Path,
                                       tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       no_model: None) -> None:
    """Before: exit 1 with a traceback after the model loaded (``IndexError: Invalid key: 0 is
    out of bounds for size 0``; ``ValueError: `max_new_tokens` must be greater than 0``)."""
    err = refused(command, tiny_lm_dir, tmp_path, capsys, flag, value)
    assert f"{flag.removeprefix('--')}: must be at least 1, not {value}" in err


def test_sft_without_a_max_length_is_refused(tiny_lm_dir: Path, tmp_path: Path,
                                             no_model: None) -> None:
    from trainers.common.args import ConfigError
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    with pytest.raises(ConfigError, match="max_length: must be at least 1, not None"):
        train_sft(SFTArgs(train="unused", model=str(tiny_lm_dir)),
                  sft_config(output_dir=str(tmp_path / "out"), max_length=None))


@pytest.mark.parametrize(("flags", "message"), [
    (["--layers", "0"], "layers: must be at least 1, not 0"),
    (["--intermediate-size", "0"], "intermediate_size: must be at least 1, not 0"),
    (["--heads", "0"], "heads: must be at least 1, not 0"),
    (["--vocab-size", "0"], "vocab_size: must be at least 6, not 0"),
    (["--hidden-size", "30", "--heads", "4"], "hidden_size: 30 does not split into 4 heads"),
    (["--hidden-size", "36", "--heads", "4"], "hidden_size: 36 does not split into 4 heads"),
    (["--hidden-size", "40", "--heads", "5"], "heads: 5 heads cannot share 2 key/value heads")])
def test_from_scratch_sizes_that_build_no_working_model_are_refused(
        flags: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: ``--layers 0`` and ``--intermediate-size 0`` trained a degenerate model and
    said ``saved``; the others failed with a traceback (``OverflowError``,
    ``ZeroDivisionError``, a tensor size mismatch at the first forward pass)."""
    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")
    assert main(["wm", "sft", "--train", str(train), "--output_dir", str(tmp_path / "out"),
                 "--threads", "1", "--max_steps", "1", "--report_to", "none", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_max_length_that_cuts_every_target_is_refused(
        tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        no_model: None) -> None:
    """Before, every target lost its closing tag and EOS and the run said ``saved``: the model
    learned to leave its observation open (which the reward caps)."""
    err = refused("sft", tiny_lm_dir, tmp_path, capsys, "--max_length", "130")
    assert "max_length: every one of the 2 targets is cut to the 66 tokens max_length 130" in err


def test_pinned_memory_is_asked_for_only_on_an_accelerator() -> None:
    """On a CPU torch warned at every data loader that pinned memory would not be used."""
    import torch

    from trainers.world_model.rl import grpo_config
    from trainers.world_model.sft import sft_config

    cuda = torch.cuda.is_available()
    assert sft_config().dataloader_pin_memory is cuda
    assert grpo_config().dataloader_pin_memory is cuda
