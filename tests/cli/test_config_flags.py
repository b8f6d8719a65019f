"""TRL and Transformers settings passed through our commands (``agentworld wm sft``, ``wm rl``,
``examples/trl_grpo_floor.py``): values the library configs take unchecked are one line, exit
status 2, naming the flag, before any model loads. Before, ``--per_device_train_batch_size 0``
and ``--gradient_accumulation_steps 0`` left a traceback once training began, ``--temperature
-1`` and ``--top_p 2`` trained, and ``--learning_rate nan`` was reported as a checkpoint
mismatch ("nan -> nan")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="TRL's configs need trl: pip install 'agentworld[train]'")

from agentworld_envs.cli import main, run_command  # noqa: E402
from tests.helpers.examples import load_example  # noqa: E402

REFUSED = [
    ("sft", "--per_device_train_batch_size", "0", "must be at least 1, not 0"),
    ("sft", "--gradient_accumulation_steps", "0", "must be at least 1, not 0"),
    ("sft", "--learning_rate", "nan", "not nan"),
    ("sft", "--learning_rate", "-1", "must be at least 0, not -1.0"),
    ("sft", "--num_train_epochs", "-1", "must be at least 0, not -1.0"),
    ("sft", "--max_grad_norm", "inf", "not inf"),
    ("sft", "--seed", "-1", "must be from 0 to 2**32 - 1, not -1"),
    ("sft", "--adam_beta1", "nan", "must be a finite number, not nan"),
    ("rl", "--temperature", "-1", "must be above 0, not -1.0"),
    ("rl", "--top_p", "2", "must be above 0 and at most 1, not 2.0"),
    ("rl", "--num_generations", "0", "must be at least 2, not 0"),
    ("rl", "--steps_per_generation", "0", "must be at least 1, not 0"),
    ("rl", "--beta", "-1", "must be at least 0, not -1.0"),
]


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything loads a model."""
    import transformers

    def loaded(*_: Any, **__: Any) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", loaded)


@pytest.mark.parametrize(("command", "flag", "value", "message"), REFUSED,
                         ids=[f"{c}{f}={v}" for c, f, v, _ in REFUSED])
def test_wm_training_refuses_a_bad_trl_setting_in_one_line(
        command: str, flag: str, value: str, message: str, no_model: None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    model = ["--model", str(tmp_path / "model")] if command == "rl" else []
    assert main(["wm", command, "--train", str(tmp_path / "train.jsonl"), *model,
                 "--output_dir", str(out), flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agentworld: error: {flag.removeprefix('--')}: must be ")
    assert err.count("\n") == 1
    assert err.endswith(f"{message}\n"), err
    assert not out.exists()


def test_good_trl_settings_are_still_taken() -> None:
    from trl import GRPOConfig

    from trainers.common.flags import parse_config

    config = parse_config(GRPOConfig, [
        "--temperature", "0.7", "--top_p", "1", "--num_generations", "2", "--beta", "0",
        "--learning_rate", "0", "--seed", str(2**32 - 1), "--max_steps", "-1",
        "--per_device_train_batch_size", "2", "--use_cpu", "true", "--output_dir", "unused"])
    assert (config.temperature, config.top_p, config.seed, config.max_steps) == (
        0.7, 1.0, 2**32 - 1, -1)


def test_the_trl_example_refuses_a_negative_temperature_before_any_work(
        monkeypatch: pytest.MonkeyPatch, no_model: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("trl_grpo_floor", monkeypatch)

    def built(*_: Any, **__: Any) -> None:
        raise AssertionError("the tiny model was built")

    monkeypatch.setattr(example, "tiny_model", built)
    assert run_command(lambda: example.main(["--temperature", "-1"])) == 2
    assert capsys.readouterr().err == "error: temperature: must be above 0, not -1.0\n"
