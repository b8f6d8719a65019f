"""The hybrid world-model reward: rule checks and the rubric judge, as TRL reward functions.

Rule part (each 0-1, from code, hard to game):

* ``format``: exactly one observation block, non-empty;
* ``closure``: every opened observation tag closed, reasoning tags balanced;
* ``json``: the observation parses as JSON when the ground truth does (skipped otherwise);
* ``facts``: agreement with the ground truth where it exists: 1 for an exact match, else the
  share of the real JSON leaves reproduced (0 for a non-JSON mismatch);
* ``no_hedging``: no speculative wording in the observation.

The rule score is the weighted mean of the applicable checks; an output with no closed
observation tag gets at most ``UNCLOSED_CAP`` (the bench's 2.0-of-5 total cap, normalised). The
rubric part is the judge's sample total on 0-1, after the bench's rule caps (so an unclosed
output's is capped the same way); a sample the judge gave no verdict for scores its rule score,
and counts against the run's fault budget (:class:`~agentworld_envs.backends.faults.FaultTally`).
An empty completion (the policy ended at once) is not sent to the judge: it scores its rule
score, counts as no judge fault, and its share is logged as ``judge/empty``.
:func:`rule_reward` and :func:`make_judge_reward` are TRL ``reward_funcs``; with
``reward_weights`` ``[1 - w, w]`` the trainer's reward is ``(1 - w) * rule + w * judge``, at
most ``UNCLOSED_CAP`` for an unclosed output whatever the judge says.

Example:
    >>> truth = '{"status": "ok", "result": 7}'
    >>> rule_checks('<predicted_observation>{"status": "ok", "result": 7}'
    ...             '</predicted_observation>', truth)["facts"]
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld_envs.backends import Backend
from agentworld_envs.backends.faults import FaultTally
from agentworld_envs.bench.diagnostics import RULE_CAPS, diagnose
from agentworld_envs.bench.items import BenchItem
from agentworld_envs.bench.report import normalise
from agentworld_envs.bench.run import run_bench
from agentworld_envs.world.fidelity import step_fidelity
from agentworld_envs.world.parsing import parse_world_model_output

__all__ = ["RuleWeights", "UNCLOSED_CAP", "capped_rule_score", "make_judge_reward",
           "rule_checks", "rule_reward", "rule_score"]

UNCLOSED_CAP = normalise(RULE_CAPS["unclosed_total_max"]) / 100


@dataclass(frozen=True)
class RuleWeights:
    """Weights of the rule checks (normalised over the checks that apply)."""

    format: float = 0.15
    closure: float = 0.15
    json: float = 0.2
    facts: float = 0.4
    no_hedging: float = 0.1


def rule_checks(output: str, truth: str | None) -> dict[str, float]:
    """Each rule check's value in [0, 1]; ``nan`` where a check does not apply."""
    diagnostics = diagnose(output)
    parsed = parse_world_model_output(output, max_chars=len(output))  # whole, as the truth is
    checks = {
        "format": float(diagnostics.response_start_tag_count == 1
                        and not diagnostics.extracted_no_output),
        "closure": float(diagnostics.tags_closed and "broken_think" not in parsed.flags),
        "no_hedging": float(diagnostics.observation_speculative_word_count == 0),
        "json": math.nan, "facts": math.nan,
    }
    if truth is not None:
        fidelity = step_fidelity(parsed.observation, truth)
        if fidelity.real_json:
            checks["json"] = float(fidelity.predicted_json)
        checks["facts"] = 1.0 if fidelity.exact else (
            fidelity.values if fidelity.real_json else 0.0)
    return checks


def rule_score(checks: dict[str, float], weights: RuleWeights = RuleWeights()) -> float:
    """The weighted mean of the applicable checks."""
    applicable = {k: v for k, v in checks.items() if not math.isnan(v)}
    total_weight = sum(getattr(weights, k) for k in applicable)
    return sum(getattr(weights, k) * v for k, v in applicable.items()) / total_weight


def capped_rule_score(output: str, truth: str | None,
                      weights: RuleWeights = RuleWeights()) -> tuple[float, dict[str, float]]:
    """The rule score of one output (at most ``UNCLOSED_CAP`` when unclosed) and its checks."""
    checks = rule_checks(output, truth)
    score = rule_score(checks, weights)
    return (min(score, UNCLOSED_CAP) if checks["closure"] == 0.0 else score), checks


def _nanmean(values: Sequence[float]) -> float:
    present = [v for v in values if not math.isnan(v)]
    return sum(present) / len(present) if present else math.nan


def rule_reward(completions: Sequence[str], ground_truth: Sequence[str | None],
                log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float]:
    """TRL reward function: each completion's capped rule score.

    ``ground_truth`` is the dataset column of the same name; each check's mean over the batch
    (where it applies) goes to ``log_metric`` as ``rule/<check>``.
    """
    scored = [capped_rule_score(c, t) for c, t in zip(completions, ground_truth, strict=True)]
    if log_metric is not None:
        for check in scored[0][1] if scored else ():
            mean = _nanmean([checks[check] for _, checks in scored])
            if not math.isnan(mean):
                log_metric(f"rule/{check}", mean)
    return [score for score, _ in scored]


def make_judge_reward(judge: Backend, items: Sequence[BenchItem],
                      tally: FaultTally | None = None) -> Callable[..., list[float]]:
    """A TRL reward function: the rubric judge's normalised total of each completion.

    Args:
        judge: The judge backend, asked at every step (its owner closes it).
        items: The training items; the dataset's ``item_index`` column points into them.
        tally: Counts the samples judged and those left without a verdict, and raises
            :class:`~agentworld_envs.backends.faults.TooManyFaultsError` past its budget
            (default: the default budget of failed calls).

    All non-empty completions of a step are judged in one batched bench run (one retry for an
    unreadable verdict). A sample left without a verdict scores its rule score, the share of
    such samples is logged as ``judge/failed``, and each one is added to ``tally``. An empty
    completion is the policy's, not the judge's, failure: it scores its rule score, unjudged
    and untallied, and the share of them is logged as ``judge/empty``.
    """
    tally = tally if tally is not None else FaultTally(what="judge verdicts")

    def judge_reward(completions: Sequence[str], item_index: Sequence[int],
                     ground_truth: Sequence[str | None],
                     log_metric: Callable[[str, float], None] | None = None,
                     **_: Any) -> list[float]:
        asked = [k for k, completion in enumerate(completions) if completion]
        records = run_bench([items[item_index[k]] for k in asked],
                            [completions[k] for k in asked], judge, retries=1,
                            rule_caps=True).records if asked else []
        totals = {k: record["capped_total"] for k, record in zip(asked, records, strict=True)
                  if not math.isnan(record.get("capped_total", math.nan))}
        missed = [record.get("reason") or "no verdict"
                  for k, record in zip(asked, records, strict=True) if k not in totals]
        if log_metric is not None:
            log_metric("judge/failed", len(missed) / max(1, len(asked)))
            log_metric("judge/empty", 1 - len(asked) / max(1, len(completions)))
        tally.add(len(asked), missed)
        return [normalise(totals[k]) / 100 if k in totals else capped_rule_score(c, t)[0]
                for k, (c, t) in enumerate(zip(completions, ground_truth, strict=True))]

    return judge_reward
