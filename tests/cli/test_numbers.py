"""Numbers on the command line that only failed once work had begun: a negative or huge
``--seed`` (a traceback from numpy or torch), a NaN or infinite ``--learning-rate`` (trained
on silently), ``--max-faults -2``, and a thread count in the tens of thousands (torch crashed
with a segmentation fault). Each is now one line, exit status 2, naming the flag."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.cli import main, run_command
from tests.helpers.examples import ROOT, load_example


@pytest.mark.parametrize(("argv", "flag"), [
    (["wm", "fidelity", "SAMPLE", "--backend", "scripted", "--seed", "-1"], "--seed"),
    (["wm", "fidelity", "SAMPLE", "--backend", "scripted", "--seed", str(2**64)], "--seed"),
    (["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted", "--seed", "-1"],
     "--seed"),
    (["wm", "export", "--corpus", "unused", "--out", "unused", "--seed", "-1"], "--seed"),
])
def test_a_seed_out_of_range_is_one_line(argv: list[str], flag: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``wm fidelity --seed 2**64`` on an hf world model left torch's "Overflow when
    unpacking long long" traceback after loading it; ``wm export --seed -1`` numpy's."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {flag}: must be from 0 to 4294967295" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--seed", "-1"], "argument --seed: must be from 0 to 4294967295, not -1"),
    (["--learning-rate", "nan"], "argument --learning-rate: must be at least 0, not nan"),
    (["--learning-rate", "inf"], "argument --learning-rate: must be at least 0, not inf"),
    (["--max-faults", "-2"], "argument --max-faults: must be at least -1, not -2"),
])
def test_the_simulated_rl_example_refuses_bad_numbers_before_any_env(
        argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("simulated_rl", monkeypatch)

    def made(*_: Any, **__: Any) -> None:
        raise AssertionError("an env was made")

    monkeypatch.setattr(example.gym, "make_vec", made)
    assert run_command(lambda: example.main(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_the_sb3_example_refuses_a_negative_seed_and_too_many_threads(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("stable_baselines3")
    example = load_example("sb3_ppo_floor", monkeypatch)
    for argv, message in ((["--seed", "-1"], "argument --seed: must be from 0"),
                          (["--threads", "100000"], "argument --threads: must be from 1 to"),
                          (["--plot", str(ROOT)], "is a folder; name the PNG file")):
        assert run_command(lambda argv=argv: example.parse_args(argv)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


def test_team_train_refuses_a_thread_count_that_crashes_torch(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``--torch-threads 100000`` crashed torch (segmentation fault, no message)."""
    torch = pytest.importorskip("torch")

    def asked(threads: int) -> None:
        raise AssertionError(f"torch was asked for {threads} threads")

    monkeypatch.setattr(torch, "set_num_threads", asked)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert main(["team", "train", "joint", "--torch-threads", "100000"]) == 2
    assert capsys.readouterr().err == ("agentworld: error: torch_threads: must be at most 32 (8 "
                                       "per CPU of this machine), got 100000\n")


def test_good_numbers_are_still_taken() -> None:
    from agentworld_envs.cli_errors import number_type, seed_number
    from trainers.common.args import TeamArgs

    assert seed_number("0") == 0 and seed_number(str(2**32 - 1)) == 2**32 - 1
    assert number_type(float, 0)("1e30") == 1e30
    assert number_type(int, 0)("1" + "0" * 400) == 10**400  # a huge int is no float
    assert TeamArgs(torch_threads=1, log_dir="").torch_threads == 1


@pytest.mark.parametrize("command", ["sft", "rl"])
def test_wm_training_refuses_a_thread_count_that_crashes_torch(
        command: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``wm sft --threads 100000`` was a 59-line PanicException traceback."""
    train = tmp_path / "train.jsonl"
    train.write_text("")
    model = ["--model", str(tmp_path)] if command == "rl" else []
    assert main(["wm", command, "--train", str(train), *model, "--threads", "100000"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "threads: must be at most" in error
