"""The stage loop shared by every team trainer: budget, evaluation, logging, checkpoints.

A trainer supplies ``play_stage(stage) -> record`` (its algorithm) and ``stage_cost(stage)`` (the
rollout episodes that stage will sample). Stages run while the next one fits in
``total_episodes``, so trainers compare at a matched rollout budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers.common.args import ConfigError, TeamArgs
from trainers.common.checkpoint import (
    has_checkpoint,
    load_checkpoint,
    resume_settings,
    save_checkpoint,
    saved_stages,
)
from trainers.common.runlog import RunLogger
from trainers.common.team import EVAL_SEED_OFFSET, Team

__all__ = ["TrainResult", "run_stages", "agent_record", "budget_stages", "check_budget"]

StageHook = Callable[[int, Team, dict[str, Any]], None]


@dataclass
class TrainResult:
    """What a training run returns."""

    team: Team
    history: list[dict[str, Any]]
    """One flat record of scalars per stage, in order."""
    final_eval: float
    """Mean team reward of the trained team on the evaluation episodes."""
    initial_eval: float | None
    """The same before training (None when resumed)."""
    held_out: dict[str, float]
    """The trained team on the task's held-out items (:meth:`Team.evaluate_held_out`; empty
    for tasks without them)."""
    run_dir: str | None


def budget_stages(stage_cost: Callable[[int], int], total_episodes: int) -> int:
    """How many stages ``total_episodes`` pays for, from the first."""
    stages = spent = 0
    while spent + stage_cost(stages) <= total_episodes:
        spent += stage_cost(stages)
        stages += 1
    return stages


def check_budget(args: TeamArgs, stage_cost: Callable[[int], int]) -> None:
    """Refuse a fresh run whose ``total_episodes`` does not pay for its first stage (it would
    train nothing and report the untrained team as trained)."""
    if not args.resume and stage_cost(0) > args.total_episodes:
        raise ConfigError("total_episodes", f"{args.total_episodes} is below one stage "
                                            f"({stage_cost(0)} rollout episodes with these "
                                            f"settings): nothing would train")


def agent_record(agent: int, values: dict[str, float], group: str) -> dict[str, float]:
    """Prefix an agent's values for logging: ``{group}/agent_{i}/{name}``."""
    return {f"{group}/agent_{agent}/{name}": value for name, value in values.items()}


def _phases(before: dict[str, float], after: dict[str, float], stage_s: float
            ) -> dict[str, float]:
    """A stage's time per phase: rollouts (generation and env steps, probes included),
    scoring old log-probs, the rest (updates, KL checks, line search); tokens per second of
    rollout."""
    rollout, scoring = (after[k] - before[k] for k in ("rollout_s", "scoring_s"))
    tokens = after["new_tokens"] - before["new_tokens"]
    record = {"time/stage_s": stage_s, "time/rollout_s": rollout, "time/scoring_s": scoring,
              "time/update_s": max(stage_s - rollout - scoring, 0.0)}
    if tokens:
        record["charts/tokens_per_s"] = tokens / rollout if rollout > 0 else 0.0
    return record


def _resume_note(args: TeamArgs) -> str:
    """What an interrupted run has saved, and how to go on."""
    if not args.checkpoint_dir:
        return "nothing is saved (no checkpoint_dir, --checkpoint-dir): a rerun starts afresh"
    stages = saved_stages(args.checkpoint_dir)
    if not stages:
        return (f"no stage finished, so {args.checkpoint_dir!r} holds no checkpoint: rerun "
                f"without resume to start afresh")
    return (f"the checkpoint in {args.checkpoint_dir!r} holds {stages} finished "
            f"stage{'' if stages == 1 else 's'}: rerun with the same settings and resume "
            f"(--resume) to go on from there")


def _resumed_logger(args: TeamArgs, run_dir: str | None,
                    history: list[dict[str, Any]]) -> RunLogger:
    """The logger of a resumed run, with the last saved stage's record written again.

    Its writer purges every point from that stage's step on, where a run stopped after the
    stage, or already finished, may also have logged its final evaluation: each point is then
    logged once, however often the run is resumed."""
    logger = RunLogger(args, run_dir, history[:-1])
    logger.log(history[-1], history[-1]["episodes"])
    return logger


def run_stages(args: TeamArgs, team: Team, play_stage: Callable[[int], dict[str, Any]],
               stage_cost: Callable[[int], int],
               on_stage_end: StageHook | None = None) -> TrainResult:
    """Run stages until the budget is spent; evaluate, log and checkpoint along the way.

    Ctrl-C stays a ``KeyboardInterrupt`` (an experiment that catches each run's errors still
    stops), its message saying what is saved and how to go on.

    Args:
        args: Trainer settings.
        team: The team, freshly built (its state is loaded when ``args.resume``).
        play_stage: Runs one stage of the algorithm; returns its record.
        stage_cost: Rollout episodes a stage will sample.
        on_stage_end: Called with ``(stage, team, record)`` after each stage is saved.

    Raises:
        ConfigError: a fresh run whose budget does not hold one stage (it would train nothing
            and report the untrained team as trained); ``resume`` with no checkpoint in
            ``checkpoint_dir`` (a mistyped folder would otherwise start afresh unnoticed); a
            fresh run whose ``checkpoint_dir`` holds a checkpoint (it would be replaced).
    """
    try:
        return _run_stages(args, team, play_stage, stage_cost, on_stage_end)
    except KeyboardInterrupt as exc:
        raise KeyboardInterrupt(_resume_note(args)) from exc


def _run_stages(args: TeamArgs, team: Team, play_stage: Callable[[int], dict[str, Any]],
                stage_cost: Callable[[int], int], on_stage_end: StageHook | None) -> TrainResult:
    eval_seed = args.seed + EVAL_SEED_OFFSET
    stage, history, run_dir, initial = 0, None, None, None
    if args.resume and not has_checkpoint(args.checkpoint_dir):
        found = "holds no finished stage" if Path(args.checkpoint_dir).is_dir() else (
            "does not exist")
        raise ConfigError("resume", f"checkpoint_dir {args.checkpoint_dir!r} {found}: nothing "
                                    f"to resume; check the folder, or leave resume off to "
                                    f"start afresh")
    if not args.resume and args.checkpoint_dir and has_checkpoint(args.checkpoint_dir):
        raise ConfigError("checkpoint_dir", f"{args.checkpoint_dir!r} holds an earlier run's "
                                            f"checkpoint, which a fresh run would replace: "
                                            f"pass resume to continue it, or choose another "
                                            f"folder")
    check_budget(args, stage_cost)
    if args.resume:
        state = load_checkpoint(args.checkpoint_dir, team, resume_settings(args))
        stage, history = state["stage"], state["history"]
        if args.log_dir and state["run_dir"]:  # the same run, under this run's log_dir
            run_dir = str(Path(args.log_dir) / Path(state["run_dir"]).name)
    else:
        initial = team.evaluate(args.eval_episodes, eval_seed)
    logger = _resumed_logger(args, run_dir, history) if args.resume else RunLogger(args)
    try:
        if initial is not None:
            logger.log({"stage": -1, "episodes": 0, "charts/eval_team_reward": initial,
                        **team.evaluate_held_out(args.pass_k, eval_seed)}, 0)
        while team.episodes + stage_cost(stage) <= args.total_episodes:
            before, start = dict(team.clock), time.perf_counter()
            record = {"stage": stage, **play_stage(stage)}
            record.update(_phases(before, team.clock, time.perf_counter() - start))
            if team.transcript is not None:
                record["transcript"] = team.transcript
            record["episodes"] = team.episodes
            record["charts/episodes"] = team.episodes
            record["charts/rollouts"] = team.collections
            if (stage + 1) % args.eval_every == 0:
                record["charts/eval_team_reward"] = team.evaluate(args.eval_episodes, eval_seed)
            logger.log(record, team.episodes)
            stage += 1
            if args.checkpoint_dir:
                save_checkpoint(args.checkpoint_dir, team, {
                    "stage": stage, "history": logger.history, "run_dir": logger.run_dir,
                    "settings": resume_settings(args)})
            if on_stage_end is not None:
                on_stage_end(stage - 1, team, record)
        last = logger.history[-1] if logger.history else {}
        if last.get("episodes") == team.episodes and "charts/eval_team_reward" in last:
            final, record = last["charts/eval_team_reward"], {}  # the same team, seed and step
        else:
            final = team.evaluate(args.eval_episodes, eval_seed)
            record = {"charts/eval_team_reward": final}
        held_out = team.evaluate_held_out(args.pass_k, eval_seed)
        logger.log({"stage": stage, "episodes": team.episodes, **record,
                    "charts/final_eval": final, **held_out}, team.episodes)
    finally:
        logger.close()
    return TrainResult(team, logger.history, final, initial, held_out, logger.run_dir)

