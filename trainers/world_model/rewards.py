"""The hybrid world-model reward: rule checks, combined with the rubric judge.

Rule part (each 0-1, from code, hard to game):

* ``format``: exactly one observation block, non-empty;
* ``closure``: every opened observation tag closed, reasoning tags balanced;
* ``json``: the observation parses as JSON when the ground truth does (skipped otherwise);
* ``facts``: agreement with the ground truth where it exists: 1 for an exact match, else the
  share of the real JSON leaves reproduced (0 for a non-JSON mismatch);
* ``no_hedging``: no speculative wording in the observation.

The rule score is the weighted mean of the applicable checks. The rubric part is the judge's
sample total on 0-1 (after the bench's rule caps). The reward is
``(1 - judge_weight) * rule + judge_weight * judge``; without a judge verdict it is the rule
score. Whatever the judge says, an output with no closed observation tag gets at most
``UNCLOSED_CAP`` (the bench's 2.0-of-5 total cap, normalised).

Example:
    >>> truth = '{"status": "ok", "result": 7}'
    >>> rule_checks('<predicted_observation>{"status": "ok", "result": 7}'
    ...             '</predicted_observation>', truth)["facts"]
    1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentworld_envs.bench.diagnostics import RULE_CAPS, diagnose
from agentworld_envs.bench.fidelity import step_fidelity
from agentworld_envs.bench.report import normalise
from agentworld_envs.sim.parsing import parse_world_model_output

__all__ = ["RuleWeights", "UNCLOSED_CAP", "hybrid_reward", "rule_checks", "rule_score"]

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
    parsed = parse_world_model_output(output)
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


def hybrid_reward(output: str, truth: str | None, judge_total: float | None = None,
                  judge_weight: float = 0.0, weights: RuleWeights = RuleWeights()
                  ) -> tuple[float, dict[str, float]]:
    """The reward of one output and its breakdown.

    Args:
        output: The world model's raw output.
        truth: The real observation, where there is one.
        judge_total: The judge's sample total on the 1-5 scale (None: no verdict).
        judge_weight: The rubric's share of the reward.
        weights: The rule checks' weights.
    """
    checks = rule_checks(output, truth)
    rule = rule_score(checks, weights)
    breakdown = {**checks, "rule": rule}
    reward = rule
    if judge_total is not None and not math.isnan(judge_total):
        judged = normalise(judge_total) / 100
        breakdown["judge"] = judged
        reward = (1 - judge_weight) * rule + judge_weight * judged
    if checks["closure"] == 0.0:
        reward = min(reward, UNCLOSED_CAP)
    breakdown["reward"] = reward
    return reward, breakdown
