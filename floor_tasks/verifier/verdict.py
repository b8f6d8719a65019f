"""The verdict: every section's checks, the failure labels and the failure class."""

from __future__ import annotations

from typing import Any

import floor_tasks.verifier.answers  # noqa: F401 - registers the answer checks
import floor_tasks.verifier.forbidden  # noqa: F401 - registers the forbidden behaviours
import floor_tasks.verifier.trajectory  # noqa: F401 - registers the trajectory checks
from agentworld_envs.protocol.endings import FINAL_ANSWER, STEP_BUDGET_EXHAUSTED
from floor_tasks.task import Check, Task, Variant
from floor_tasks.verifier.registry import ANSWER_CHECKS, CHECKS
from floor_tasks.verifier.trace import Trace

FAILURE_CLASSES = {
    "F1": "hallucinated tool",
    "F2": "malformed call",
    "F3": "context amnesia",
    "F4": "step budget exhausted",
    "F5": "early resignation",
    "F6": "wrong tool use",
    "F7": "partial completion",
}


def _section(checks: list[Check], trace: Trace, variant: Variant) -> dict[str, Any]:
    subchecks: dict[str, dict[str, Any]] = {}
    for check in checks:
        passed, reason = CHECKS[check.check](trace, **variant.filled(check.params))
        name = check.check
        suffix = 2
        while name in subchecks:
            name, suffix = f"{check.check}_{suffix}", suffix + 1
        subchecks[name] = {"passed": passed, "reason": reason}
    return {"passed": all(s["passed"] for s in subchecks.values()), "subchecks": subchecks}


def check_names(task: Task) -> None:
    """Fail loudly if a task names a check that does not exist."""
    unknown = [c.check for c in task.trajectory + task.forbidden if c.check not in CHECKS]
    if task.answer is not None and task.answer.check not in ANSWER_CHECKS:
        unknown.append(task.answer.check)
    if unknown:
        raise ValueError(f"task {task.id} names unknown checks: {unknown}")


def default_checks(variant: Variant) -> tuple[list[Check], list[Check]]:
    """Checks every task has: valid arguments (tool tasks) and the always-forbidden ones."""
    task = variant.task
    trajectory = [Check(check="valid_arguments", repair_turns=task.repair_turns)] if task.tools \
        else []
    forbidden = [Check(check="hallucinated_tool")]
    if task.submission is None:
        forbidden.append(Check(check="terminate_without_answer"))
    else:
        forbidden.append(Check(check="trial_and_error_submission"))
    return trajectory, forbidden


def verify(trace: Trace) -> dict[str, Any]:
    """Score a finished episode. Returns the verdict with every check's result and labels."""
    variant, task = trace.variant, trace.variant.task
    if task.answer is not None:
        passed, reason = ANSWER_CHECKS[task.answer.check](
            trace, **variant.filled(task.answer.params))
        answer = {"passed": passed, "reason": reason}
    else:
        answer = {"passed": True, "reason": "no final-answer check (the submission decides)"}
    if task.submission is not None:
        accepted = trace.accepted_submission
        submission = {"passed": accepted is not None, "reason": (
            "final submission accepted" if accepted is not None else
            "no accepted final submission")}
    else:
        submission = {"passed": True, "reason": "no submission required"}
    base_traj, base_forbidden = default_checks(variant)
    budget = {"passed": trace.termination != STEP_BUDGET_EXHAUSTED,
              "reason": "finished within the step budget"
              if trace.termination != STEP_BUDGET_EXHAUSTED else "step budget exhausted"}
    trajectory = _section(base_traj + list(task.trajectory), trace, variant)
    trajectory["subchecks"] = {"step_budget": budget, **trajectory["subchecks"]}
    trajectory["passed"] = trajectory["passed"] and budget["passed"]
    forbidden = _section(base_forbidden + list(task.forbidden), trace, variant)
    checks = {"final_answer": answer, "submission": submission, "trajectory": trajectory,
              "forbidden": forbidden}
    passed = all(c["passed"] for c in checks.values())
    labels = [k for k in ("final_answer", "submission") if not checks[k]["passed"]] + [
        name for sec in ("trajectory", "forbidden")
        for name, sub in checks[sec]["subchecks"].items() if not sub["passed"]]
    return {"passed": passed, "checks": checks, "failure_labels": labels,
            "failure_class": None if passed else _failure_class(trace, checks)}


def _failure_class(trace: Trace, checks: dict[str, Any]) -> str:
    forbidden = checks["forbidden"]["subchecks"]
    trajectory = checks["trajectory"]["subchecks"]
    if trace.termination == STEP_BUDGET_EXHAUSTED:
        return "F4"
    if not forbidden["hallucinated_tool"]["passed"]:
        return "F1"
    if not trajectory.get("valid_arguments", {"passed": True})["passed"]:
        return "F2"
    if trace.termination == FINAL_ANSWER:
        return "F5"
    if not checks["trajectory"]["passed"]:
        return "F6"
    if any(c["passed"] for c in checks.values()):
        return "F7"
    return "F3"
