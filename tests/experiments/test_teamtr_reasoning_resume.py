"""The TeamTR reasoning experiment resumed after a run was cut short logs that run once.

A run the interruption cut short is trained again from its seed on ``--resume``; its first
attempt's TensorBoard folder was left beside the new one, so TensorBoard showed the run twice
(its first stages once in each folder).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.reasoning import small_experiment
from trainers import teamtr
from trainers.common.team import Team
from trainers.experiments import teamtr_reasoning

pytest.importorskip("reasoning_gym")
pytest.importorskip("peft")


def logged_runs(root: Path) -> dict[Path, dict[str, list[tuple[int, float]]]]:
    """Each TensorBoard folder under ``root`` with its scalars (but timings and speeds)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    runs = {}
    for folder in sorted({path.parent for path in root.rglob("events.out.tfevents.*")}):
        events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        events.Reload()
        runs[folder] = {tag: [(e.step, e.value) for e in events.Scalars(tag)]
                        for tag in events.Tags()["scalars"]
                        if not tag.startswith("time/") and tag != "charts/tokens_per_s"}
    return runs


def test_a_run_cut_short_is_logged_once_when_it_is_run_again(
        tiny_lm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = small_experiment(tiny_lm_dir, seeds=1, total_episodes=16)
    teamtr_reasoning.main([*argv, "--out", str(tmp_path / "whole" / "results.json")])
    (whole,) = logged_runs(tmp_path / "whole").values()
    train = teamtr.train

    def stop(stage: int, team: Team, record: dict) -> None:
        raise KeyboardInterrupt  # after the first of two stages

    monkeypatch.setattr(teamtr, "train", lambda args: train(args, on_stage_end=stop))
    out = tmp_path / "cut" / "results.json"
    with pytest.raises(KeyboardInterrupt):
        teamtr_reasoning.main([*argv, "--out", str(out)])
    monkeypatch.setattr(teamtr, "train", train)
    teamtr_reasoning.main([*argv, "--out", str(out), "--resume"])
    assert list(logged_runs(tmp_path / "cut").values()) == [whole]
