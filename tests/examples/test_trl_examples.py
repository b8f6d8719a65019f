"""The TRL examples' command lines: settings GRPOConfig refuses are one line before any work
(``openenv_trl.py``), and the throughput line counts the steps the trainer took
(``trl_grpo_floor.py``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("trl", reason="the TRL examples need trl: pip install 'agentworld[train]'")

from agentworld_envs.cli_errors import UsageError  # noqa: E402
from tests.helpers.examples import load_example  # noqa: E402


def test_settings_grpo_config_refuses_are_a_usage_error_before_any_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, ``openenv_trl.py`` started the server and built the tiny model first, then
    GRPOConfig's ``ValueError`` left as a traceback with exit status 1."""
    example = load_example("openenv_trl", monkeypatch)

    def started(*_: Any) -> None:
        raise AssertionError("a server was started")

    monkeypatch.setattr(example, "served", started)
    with pytest.raises(UsageError, match=r"^GRPOConfig: generation_batch_size \(4\) must be "
                                         r"divisible by num_generations \(3\)"):
        example.main(["--num-generations", "3"])


class _Trainer:
    """Stands in for ``GRPOTrainer``: ``train`` takes 3 steps, each logging a reward."""

    def __init__(self, **_: Any) -> None:
        self.state = SimpleNamespace(log_history=[], global_step=0, num_input_tokens_seen=0)

    def train(self) -> None:
        entry = {"reward": 0.5, "reward_std": 0.5, "frac_reward_zero_std": 0.0, "loss": 0.0,
                 "grad_norm": 0.1, "completions/mean_length": 38.0}
        self.state.log_history = [entry] * 3
        self.state.global_step, self.state.num_input_tokens_seen = 3, 900


def test_the_throughput_line_counts_the_steps_taken_when_epochs_set_the_length(
        tiny_lm_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``--max_steps -1 --num_train_epochs 1`` (HF's way to train by epochs) printed
    ``-1 steps in 1.5 s: -0.682 steps/s``."""
    import trl

    example = load_example("trl_grpo_floor", monkeypatch)
    monkeypatch.setattr(trl, "GRPOTrainer", _Trainer)
    example.main(["--model", str(tiny_lm_dir), "--max_steps", "-1", "--num_train_epochs", "1",
                  "--output_dir", "unused"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["step 1", "step 2", "step 3"]
    assert re.fullmatch(r"3 steps in \S+ s: \S+ steps/s, \d+ tokens/s", lines[-1]), lines[-1]


def test_a_dataset_that_fills_no_batch_is_refused_before_any_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One row (``--variants v0``) against a batch of 2 prompts: TRL's sampler dropped the
    batch, so training took no step and the example said '1 steps', exit 0."""
    for name in ("trl_grpo_floor", "openenv_trl"):
        example = load_example(name, monkeypatch)

        def started(*_: Any, **__: Any) -> None:
            raise AssertionError("work was started")

        monkeypatch.setattr(example, "served", started, raising=False)
        monkeypatch.setattr(example, "tiny_model", started, raising=False)
        with pytest.raises(UsageError, match=r"1 dataset rows fill no batch of 2 prompts"):
            example.main(["--variants", "v0"])  # each example's default batch: 2 prompts


def test_a_server_of_another_task_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--task B3`` against a server of A1 trained B3's prompts on A1's env."""
    pytest.importorskip("openenv")
    from tests.helpers.openenv_server import serve

    example = load_example("openenv_trl", monkeypatch)
    with serve("AgentFloor/A1-v0") as (url, _), \
            pytest.raises(UsageError, match=r"--task B3: the server at .* serves A1"):
        example.main(["--url", url, "--task", "B3", "--variants", "v0,v1"])


@pytest.mark.parametrize("name", ["trl_grpo_floor", "openenv_trl"])
def test_without_trl_the_examples_say_how_to_install_it(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, ``from trl import ...`` left as a ModuleNotFoundError traceback."""
    example = load_example(name, monkeypatch)
    monkeypatch.setitem(sys.modules, "trl", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r'pip install "agentworld\[train\]"'):
        example.main(["--max-steps", "1"])


def test_openenv_trl_refuses_settings_trl_would_take_unchecked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A negative temperature or a NaN learning rate went on to the server and the model."""
    from trainers.common.args import ConfigError

    example = load_example("openenv_trl", monkeypatch)
    monkeypatch.setattr(example, "served", lambda *_: (_ for _ in ()).throw(
        AssertionError("a server was started")))
    for flag, value, said in (("--temperature", "-1", "temperature: must be above 0"),
                              ("--learning-rate", "nan", "learning_rate: must be at least 0")):
        with pytest.raises(ConfigError, match=said):
            example.main([flag, value])
