"""Resuming a team trainer's run logs every TensorBoard point once, and Ctrl-C says what is
saved and how to go on.

A run resumed after it finished (or after a kill that came once its final evaluation was
logged) logged the final evaluation again at the same step; a finished run resumed with a longer
budget kept its old "final" point in the middle of the curve. Ctrl-C said only that the run was
interrupted.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from trainers import teamtr
from trainers.common.team import Team

EASY = {"n_agents": 2, "env_kwargs": {"vocab_size": 3}, "prompts_per_rollout": 32,
        "learning_rate": 2e-2, "delta": 0.5, "delta_schedule": "constant",
        "eval_episodes": 64, "eval_every": 100, "log_dir": "", "total_episodes": 2 * 256}


def easy_args(tmp_path: Path, **overrides: object) -> teamtr.Args:
    return teamtr.Args(**{**EASY, "checkpoint_dir": str(tmp_path / "checkpoint"), **overrides})


def points(run_dir: str) -> dict[str, list[tuple[int, float]]]:
    """Every scalar TensorBoard shows for the run (but timings), as (step, value) in order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"] if not tag.startswith("time/")}


def test_resuming_a_finished_run_logs_no_point_twice(tmp_path: Path) -> None:
    args = easy_args(tmp_path, log_dir=str(tmp_path / "logs"))
    finished = teamtr.train(args)
    logged = points(finished.run_dir)
    assert [step for step, _ in logged["charts/final_eval"]] == [512]
    for _ in range(2):
        again = teamtr.train(dataclasses.replace(args, resume=True))
        assert again.run_dir == finished.run_dir and again.final_eval == finished.final_eval
        assert points(finished.run_dir) == logged


def test_a_finished_run_given_a_longer_budget_logs_as_one_run_with_it(tmp_path: Path) -> None:
    longer = easy_args(tmp_path / "whole", log_dir=str(tmp_path / "whole"),
                       total_episodes=3 * 256)
    whole = points(teamtr.train(longer).run_dir)
    args = easy_args(tmp_path / "cut", log_dir=str(tmp_path / "cut"))
    teamtr.train(args)
    extended = teamtr.train(dataclasses.replace(args, resume=True, total_episodes=3 * 256))
    assert [step for step, _ in whole["charts/final_eval"]] == [768]
    assert points(extended.run_dir) == whole


def stop_at_stage(last: int):
    def stop(stage: int, team: Team, record: dict) -> None:
        if stage == last:
            raise KeyboardInterrupt

    return stop


def test_ctrl_c_says_what_is_saved_and_stays_a_keyboard_interrupt(tmp_path: Path) -> None:
    args = easy_args(tmp_path, total_episodes=3 * 256)
    saved = re.escape(f"the checkpoint in {args.checkpoint_dir!r} holds 2 finished stages: "
                      "rerun with the same settings and resume (--resume)")
    with pytest.raises(KeyboardInterrupt, match=f"^{saved}") as caught:
        teamtr.train(args, on_stage_end=stop_at_stage(1))
    assert not isinstance(caught.value, Exception)  # a runner catching a run's errors stops
    assert teamtr.train(dataclasses.replace(args, resume=True)).team.episodes == 3 * 256


def test_ctrl_c_before_anything_is_saved_says_a_rerun_starts_afresh(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KeyboardInterrupt, match=r"^nothing is saved \(no checkpoint_dir, "):
        teamtr.train(easy_args(tmp_path, checkpoint_dir=""), on_stage_end=stop_at_stage(0))

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Team, "evaluate", interrupted)  # the untrained team's evaluation
    args = easy_args(tmp_path)
    with pytest.raises(KeyboardInterrupt, match=f"^no stage finished, so "
                                                f"{re.escape(repr(args.checkpoint_dir))} holds "
                                                "no checkpoint: rerun without resume"):
        teamtr.train(args)


def test_the_command_line_prints_the_note_and_exits_130(monkeypatch, capsys) -> None:
    """``agentworld team train`` printed only "interrupted" on Ctrl-C."""
    import trainers.teamtr
    from agentworld_envs.cli import main

    def interrupted(options: list[str]) -> int:
        raise KeyboardInterrupt("the checkpoint in 'cp' holds 3 finished stages: rerun ...")

    monkeypatch.setattr(trainers.teamtr, "main", interrupted)
    assert main(["team", "train", "teamtr"]) == 130
    assert capsys.readouterr().err == ("agentworld: interrupted: the checkpoint in 'cp' holds 3 "
                                       "finished stages: rerun ...\n")
