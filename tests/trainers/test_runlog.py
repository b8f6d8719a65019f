"""A run that fails before its first stage (in the untrained team's held-out evaluation)
still closes its TensorBoard writer: what it logged is flushed, no writer thread is left."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainers import stale_sequential
from trainers.common.runlog import RunLogger
from trainers.common.team import Team


def test_a_failure_before_the_first_stage_closes_tensorboard(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    closed = []
    close = RunLogger.close
    monkeypatch.setattr(RunLogger, "close", lambda self: (closed.append(self), close(self)))

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("held-out evaluation failed")

    monkeypatch.setattr(Team, "evaluate_held_out", fail)
    args = stale_sequential.Args(env_id="team_envs/relay-v0", n_agents=2, total_episodes=32,
                                 prompts_per_rollout=8, group_size=2, eval_episodes=8,
                                 log_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="held-out evaluation failed"):
        stale_sequential.train(args)
    assert len(closed) == 1 and closed[0].writer is not None
    (run_dir,) = tmp_path.iterdir()
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert "hyperparameters/text_summary" in events.Tags()["tensors"]
