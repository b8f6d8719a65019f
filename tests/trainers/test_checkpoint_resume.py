"""Trainer checkpoints that cannot be resumed, and runs that must not replace one.

Each damaged or foreign checkpoint is one ``ConfigError`` naming the folder, before the team
changes; a foreign pickle runs no code; a fresh run leaves an earlier run's checkpoint as it
was; a resumed run logs where this run's ``log_dir`` says (nowhere when it is empty).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.checkpoint import load_checkpoint
from trainers.common.team import Team, build_team

EASY = {"n_agents": 2, "env_kwargs": {"vocab_size": 3}, "prompts_per_rollout": 32,
        "learning_rate": 2e-2, "delta": 0.5, "delta_schedule": "constant", "log_dir": "",
        "eval_episodes": 64, "eval_every": 100, "total_episodes": 3 * 256}
STAGE = "stage_000001"


def easy_args(directory: Path, **overrides: object) -> teamtr.Args:
    return teamtr.Args(**{**EASY, "checkpoint_dir": str(directory), **overrides})


def stop_after_first_stage(stage: int, team: Team, record: dict) -> None:
    if stage == 0:
        raise KeyboardInterrupt


def interrupted_run(directory: Path, **overrides: object) -> teamtr.Args:
    """The settings of a run killed after its first stage was saved in ``directory``."""
    args = easy_args(directory, **overrides)
    with pytest.raises(KeyboardInterrupt):
        teamtr.train(args, on_stage_end=stop_after_first_stage)
    return args


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint folder holding the first stage of an interrupted run."""
    directory = tmp_path_factory.mktemp("saved") / "checkpoint"
    interrupted_run(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["latest.json", STAGE]
    return directory


def cut(path: Path) -> None:
    """Keep the first half of a file, as a kill while writing it might."""
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


class Foreign:
    """An object whose unpickling touches a file: proof that loading ran code."""

    def __init__(self, witness: Path) -> None:
        self.witness = witness

    def __reduce__(self) -> tuple[object, ...]:
        return os.makedirs, (str(self.witness),)


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "missing stage folder": (lambda d: shutil.rmtree(d / STAGE), f"names {STAGE}, which is "
                                                                 f"missing"),
    "pointer cut short": (lambda d: cut(d / "latest.json"), "latest.json cannot be read"),
    "pointer outside the folder": (
        lambda d: (d / "latest.json").write_text(f'{{"stage_dir": "../x/{STAGE}"}}'),
        "latest.json names no stage folder"),
    "foreign pointer": (lambda d: (d / "latest.json").write_text('{"step": 3}'),
                        "latest.json names no stage folder"),
    "trainer file cut short": (lambda d: cut(d / STAGE / "trainer.pt"),
                               "trainer.pt is cut short or not a torch file"),
    "agent file cut short": (lambda d: cut(d / STAGE / "agent_1.pt"),
                             "agent_1.pt is cut short or not a torch file"),
    "agent file missing": (lambda d: (d / STAGE / "agent_1.pt").unlink(),
                           "agent_1.pt is missing"),
    "foreign torch file": (lambda d: torch.save({"model": 1}, d / STAGE / "trainer.pt"),
                           "trainer.pt is not one of its files"),
    "foreign pickle": (
        lambda d: torch.save({"state": Foreign(d / "ran")}, d / STAGE / "trainer.pt"),
        "trainer.pt holds more than tensors and plain data"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_checkpoint_is_one_error_and_changes_no_agent(
        saved: Path, tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "checkpoint"
    shutil.copytree(saved, directory)
    make, problem = DAMAGES[damage]
    make(directory)
    team = build_team(easy_args(directory))
    before = [p.detach().clone() for policy in team.policies for p in policy.module.parameters()]
    with pytest.raises(ConfigError, match=f"^resume: checkpoint_dir '{directory}' holds no "
                                          f"checkpoint this trainer can resume: .*{problem}"):
        load_checkpoint(directory, team)
    after = [p for policy in team.policies for p in policy.module.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert not (directory / "ran").exists()  # a foreign pickle ran no code


def test_a_fresh_run_leaves_an_earlier_runs_checkpoint_as_it_was(saved: Path,
                                                                 tmp_path: Path) -> None:
    """A fresh run into the folder replaced the checkpoint; killed while writing its first
    stage, it left latest.json naming a half-written folder."""
    directory = tmp_path / "checkpoint"
    shutil.copytree(saved, directory)
    files = {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*.*")}
    with pytest.raises(ConfigError, match=f"^checkpoint_dir: '{directory}' holds an earlier "
                                          f"run's checkpoint"):
        teamtr.train(easy_args(directory, seed=9))
    assert {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*.*")} == files
    resumed = teamtr.train(dataclasses.replace(easy_args(directory), resume=True))
    assert resumed.team.episodes == EASY["total_episodes"]


def test_a_resumed_run_logs_under_its_own_log_dir(tmp_path: Path) -> None:
    """The checkpoint's run folder was used whatever log_dir the resumed run named, so an
    empty log_dir (no TensorBoard) still wrote there."""
    pytest.importorskip("tensorboard")
    args = interrupted_run(tmp_path / "checkpoint", log_dir=str(tmp_path / "first"))
    shutil.copytree(tmp_path / "checkpoint", tmp_path / "copy")
    (first,) = (tmp_path / "first").iterdir()
    events = sorted(first.iterdir())
    quiet = teamtr.train(dataclasses.replace(args, resume=True, log_dir=""))
    assert quiet.run_dir is None
    assert sorted(first.iterdir()) == events
    moved = teamtr.train(dataclasses.replace(args, resume=True, log_dir=str(tmp_path / "moved"),
                                             checkpoint_dir=str(tmp_path / "copy")))
    assert moved.run_dir == str(tmp_path / "moved" / first.name)
    assert sorted(first.iterdir()) == events
