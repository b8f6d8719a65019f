"""Run a world model over bench items, then score it: with the rubric judge, or judge-free.

Both scorers take the same items (AgentWorldBench JSONL) and the same predictions, and report
per domain with both Overall figures (:mod:`agentworld_envs.bench.report`).

* :func:`run_bench`: the five judge dimensions, normalised to 0-100, after the rule caps of
  :mod:`agentworld_envs.bench.diagnostics`; the sample total is the mean of its dimensions.
  A sample without a generation or without a readable verdict is failed and excluded.
* :func:`score_fidelity`: exact, JSON-structural and value agreement with the ground truth
  (:func:`agentworld_envs.bench.fidelity.step_fidelity`), as 0-100.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentworld_envs.backends import Backend, BackendError, ChatRequest, SamplingParams
from agentworld_envs.bench.diagnostics import apply_rules, diagnose
from agentworld_envs.bench.fidelity import step_fidelity
from agentworld_envs.bench.items import BenchItem
from agentworld_envs.bench.judge import DIMENSIONS, judge_outputs, judge_request
from agentworld_envs.bench.report import DomainReport, domain_report, normalise
from agentworld_envs.sim.parsing import parse_world_model_output

__all__ = ["BenchResult", "FIDELITY_METRICS", "JUDGE_METRICS", "predict", "run_bench",
           "score_fidelity"]

JUDGE_METRICS = ("total", *DIMENSIONS)
FIDELITY_METRICS = ("exact", "structural", "values")


def predict(world_model: Backend, items: Sequence[BenchItem], sampling: SamplingParams,
            batch_size: int = 32) -> list[str | None]:
    """The world model's raw output for every item, ``batch_size`` requests per call.

    Each request's seed is ``sampling.seed`` plus the item's position, so results do not depend
    on the batch size. A batch whose call raises :class:`BackendError` gets None (no
    generation) for each of its items.
    """
    base = sampling.seed or 0
    requests = [ChatRequest(item.messages(), sampling=replace(sampling, seed=base + i))
                for i, item in enumerate(items)]
    outputs: list[str | None] = []
    for start in range(0, len(requests), batch_size):
        chunk = requests[start:start + batch_size]
        try:
            outputs += [c.text for c in world_model.complete(chunk)]
        except BackendError:
            outputs += [None] * len(chunk)
    return outputs


@dataclass(frozen=True)
class BenchResult:
    """Per-item records and the report."""

    records: list[dict[str, Any]]
    report: DomainReport

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return self.report.to_dict()


def score_fidelity(items: Sequence[BenchItem], outputs: Sequence[str | None]) -> BenchResult:
    """Judge-free fidelity of raw outputs against each item's ground truth, 0-100.

    ``structural`` and ``values`` apply only to items whose ground truth is JSON. A missing
    generation scores as ``"No output"`` (so 0), not as a failure: the measure needs no judge.
    """
    rows, records = [], []
    for item, output in zip(items, outputs, strict=True):
        observation = parse_world_model_output(output or "").observation
        fidelity = step_fidelity(observation, item.ground_truth)
        values = {"exact": 100.0 * fidelity.exact, "structural": 100.0 * fidelity.structural,
                  "values": 100.0 * fidelity.values}
        rows.append((item.task, values))
        records.append({"key": item.key, "task": item.task, "output": output,
                        "prediction": observation, "fidelity": fidelity.to_dict()})
    return BenchResult(records, domain_report(rows, FIDELITY_METRICS))


def run_bench(items: Sequence[BenchItem], outputs: Sequence[str | None], judge: Backend,
              sampling: SamplingParams | None = None, retries: int = 3, batch_size: int = 32,
              require_tags: bool = True) -> BenchResult:
    """Judge raw outputs on the five dimensions and report them per domain.

    Args:
        items: The bench items.
        outputs: The world model's raw output per item (None: no generation, a failed sample).
        judge: Any backend.
        sampling: The judge's sampling (default: greedy, 2048 tokens, seed 0).
        retries: Extra attempts for an unreadable verdict.
        batch_size: Judge requests per backend call.
        require_tags: Cap the total of outputs with no closing ``</predicted_observation>``.
    """
    sampling = sampling or SamplingParams(temperature=0.0, max_tokens=2048, seed=0)
    generated = [i for i, output in enumerate(outputs) if output is not None]
    diagnostics = {i: diagnose(outputs[i]) for i in generated}
    predictions = {i: parse_world_model_output(outputs[i]).observation for i in generated}
    requests = [judge_request(items[i], predictions[i], diagnostics[i],
                              replace(sampling, seed=(sampling.seed or 0) + i))
                for i in generated]
    verdicts = dict(zip(generated, judge_outputs(judge, requests, retries, batch_size),
                        strict=True))
    rows, failed, records = [], [], []
    for i, item in enumerate(items):
        record: dict[str, Any] = {"key": item.key, "task": item.task, "output": outputs[i]}
        verdict = verdicts.get(i)
        if verdict is None or verdict.scores is None:
            failed.append(item.task)
            record["error"] = "no generation" if verdict is None else verdict.error
        else:
            scores, cap, fired = apply_rules(verdict.scores, diagnostics[i], require_tags)
            total = _sample_total(scores, cap)
            values = {"total": normalise(total), **{d: normalise(scores[d]) for d in DIMENSIONS}}
            rows.append((item.task, values))
            record.update(judge_scores=verdict.scores, scores=scores, rules=fired,
                          total=total, attempts=verdict.attempts,
                          diagnostics=diagnostics[i].to_dict())
        records.append(record)
    return BenchResult(records, domain_report(rows, JUDGE_METRICS, failed))


def _sample_total(scores: dict[str, float], cap: float | None) -> float:
    """Mean of the dimension scores above 0, capped by the rules."""
    positive = [s for s in scores.values() if s > 0]
    total = sum(positive) / len(positive) if positive else math.nan
    return total if cap is None else min(total, cap)
