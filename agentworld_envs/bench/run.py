"""Run a world model over bench items, then score it: with the rubric judge, or judge-free.

Both scorers take the same items (AgentWorldBench JSONL) and the same predictions, and report
per domain with both Overall figures (:mod:`agentworld_envs.bench.report`).

* :func:`run_bench`: the five judge dimensions scored as AgentWorldBench scores them
  (``eval.py`` ``aggregate_scores``): a sample without a generation, or whose verdict is still
  unreadable after its attempts, is failed and excluded (its reason counted in the summary);
  every mean leaves out values equal to 0 (a total of 0, a dimension not given), and keeps
  negative ones; a domain's score is ``(mean - 1) / 4 * 100``. Our rule caps
  (:mod:`agentworld_envs.bench.diagnostics`) are opt-in (``rule_caps``) and reported in a second
  table, never folded into the compatible one.
* :func:`score_fidelity`: exact, JSON-structural and value agreement with the ground truth
  (:func:`agentworld_envs.world.fidelity.step_fidelity`), as 0-100.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentworld_envs.backends import Backend, BackendError, ChatRequest, SamplingParams
from agentworld_envs.bench.diagnostics import apply_rules, diagnose
from agentworld_envs.bench.items import BenchItem
from agentworld_envs.bench.judge import (
    DIMENSIONS,
    JUDGE_SAMPLING,
    JudgePrompts,
    JudgeResult,
    judge_outputs,
    judge_request,
)
from agentworld_envs.bench.report import DomainReport, domain_report, normalise
from agentworld_envs.world.fidelity import step_fidelity
from agentworld_envs.world.parsing import (
    clean_response_marker,
    parse_model_output,
    parse_world_model_output,
)
from agentworld_envs.world.prompt_sets import PromptSet

__all__ = ["BenchResult", "FIDELITY_METRICS", "JUDGE_METRICS", "NO_GENERATION", "predict",
           "run_bench", "score_fidelity"]

JUDGE_METRICS = ("total", *DIMENSIONS)
FIDELITY_METRICS = ("exact", "structural", "values", "calls")
NO_GENERATION = "No model generation"
RULE_CAPS_NOTE = ("With our rule caps (`--rule-caps`; not comparable with AgentWorldBench "
                  "figures):")


def predict(world_model: Backend, items: Sequence[BenchItem], sampling: SamplingParams,
            batch_size: int = 32, *, done: Mapping[str, str | None] | None = None,
            on_output: Callable[[str, str], None] | None = None) -> list[str | None]:
    """The world model's raw output for every item, ``batch_size`` requests per call.

    With a ``sampling.seed``, each request's seed is it plus the item's position, so results do
    not depend on the batch size (or on which items a resumed run still asks for); without one
    (the release sends none) no seed is sent. A request the backend fails gets None (no
    generation). ``done``: outputs already had, by item key, which are not asked for again;
    ``on_output(key, output)`` is called with each new output as soon as its batch returns.
    """
    done = done or {}
    requests = {i: ChatRequest(item.messages(), sampling=sampling if sampling.seed is None
                               else sampling.with_seed(sampling.seed + i))
                for i, item in enumerate(items) if item.key not in done}
    outputs = [done.get(item.key) for item in items]
    todo = list(requests)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        answers = world_model.complete_each([requests[i] for i in chunk])
        for i, answer in zip(chunk, answers, strict=True):
            if isinstance(answer, BackendError):
                continue
            outputs[i] = answer.text
            if on_output is not None:
                on_output(items[i].key, answer.text)
    return outputs


@dataclass(frozen=True)
class BenchResult:
    """Per-item records, the report, and (with rule caps) the rule-capped report beside it."""

    records: list[dict[str, Any]]
    report: DomainReport
    capped: DomainReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data, the rule-capped one under ``rule_capped``."""
        data = self.report.to_dict()
        return data if self.capped is None else {**data, "rule_capped": self.capped.to_dict()}

    def markdown(self) -> str:
        """The report's table, then the rule-capped one, if any."""
        if self.capped is None:
            return self.report.markdown()
        return f"{self.report.markdown()}\n\n{RULE_CAPS_NOTE}\n\n{self.capped.markdown()}"


def score_fidelity(items: Sequence[BenchItem], outputs: Sequence[str | None]) -> BenchResult:
    """Judge-free fidelity of raw outputs against each item's ground truth, 0-100.

    ``structural`` and ``values`` apply only to items whose ground truth is JSON. A missing
    generation scores as ``"No output"`` (so 0), not as a failure: the measure needs no judge.
    """
    rows, records = [], []
    for item, output in zip(items, outputs, strict=True):
        observation = parse_world_model_output(output or "").observation
        fidelity = step_fidelity(observation, item.ground_truth)
        values = {metric: 100.0 * getattr(fidelity, metric) for metric in FIDELITY_METRICS}
        rows.append((item.task, values))
        records.append({"key": item.key, "task": item.task, "output": output,
                        "prediction": observation, "fidelity": fidelity.to_dict()})
    return BenchResult(records, domain_report(rows, FIDELITY_METRICS))


def run_bench(items: Sequence[BenchItem], outputs: Sequence[str | None], judge: Backend,
              sampling: SamplingParams = JUDGE_SAMPLING, retries: int = 2, batch_size: int = 32,
              *, prompts: str | PromptSet | JudgePrompts | None = None, rule_caps: bool = False,
              require_tags: bool = True, error_delay_s: float = 2.0,
              done: Mapping[str, JudgeResult] | None = None,
              on_verdict: Callable[[str, JudgeResult], None] | None = None) -> BenchResult:
    """Judge raw outputs on the five dimensions and report them as AgentWorldBench does.

    Args:
        items: The bench items.
        outputs: The world model's raw output per item (None or ``""``: no generation).
        judge: Any backend.
        sampling: The judge's sampling (default: the release's, 32,768 tokens at 0.6).
        retries: Attempts after the first for an unreadable verdict (the release makes 3).
        batch_size: Judge requests per backend call.
        prompts: The judge's prompt set (a directory, a :class:`PromptSet`, loaded
            :class:`JudgePrompts`, or None for ``$AGENTWORLD_PROMPTS`` or the built-in set).
        rule_caps: Also score with our rule caps, in ``BenchResult.capped``.
        require_tags: With ``rule_caps``, cap the total of outputs with no closing tag.
        error_delay_s: Wait before re-asking after a backend error.
        done: Judge results already had, by item key, which are not asked for again.
        on_verdict: Called as ``on_verdict(key, result)`` with each new result as soon as it
            is final (a verdict read, or every attempt made).
    """
    loaded = prompts if isinstance(prompts, JudgePrompts) else JudgePrompts.load(prompts)
    done = done or {}
    verdicts = {i: done[item.key] for i, item in enumerate(items)
                if outputs[i] and item.key in done}
    asked = [i for i, output in enumerate(outputs) if output and i not in verdicts]
    requests = [judge_request(items[i], outputs[i], loaded, sampling) for i in asked]
    report = None if on_verdict is None else (
        lambda j, result: on_verdict(items[asked[j]].key, result))
    verdicts.update(zip(asked, judge_outputs(judge, requests, retries + 1, batch_size,
                                             error_delay_s, on_result=report), strict=True))
    rows, capped_rows, failed, records = [], [], [], []
    for i, item in enumerate(items):
        output = outputs[i]
        record: dict[str, Any] = {"key": item.key, "task": item.task, "output": output}
        result = verdicts.get(i)
        if result is None or result.verdict is None:
            reason = NO_GENERATION if result is None else result.reason
            failed.append((item.domain, reason))
            record.update(failed=True, reason=reason,
                          error=reason if result is None else result.error)
            if result is not None:
                record.update(attempts=result.attempts, judge_raw=result.raw)
            records.append(record)
            continue
        verdict = result.verdict
        rows.append((item.domain, _row(verdict.total, verdict.scores)))
        record.update(failed=False, prediction=clean_response_marker(parse_model_output(output)),
                      scores=verdict.scores, total=verdict.total, attempts=result.attempts,
                      strengths=verdict.strengths, weaknesses=verdict.weaknesses)
        if rule_caps:
            diagnostics = diagnose(output)
            scores, cap, fired = apply_rules(
                {d: float(s) for d, s in verdict.scores.items()}, diagnostics, require_tags)
            total = _capped_total(scores, cap)
            capped_rows.append((item.domain, _row(total, scores)))
            record.update(capped_scores=scores, capped_total=total, rules=fired,
                          diagnostics=diagnostics.to_dict())
        records.append(record)
    report = domain_report(rows, JUDGE_METRICS, failed, normalise)
    capped = domain_report(capped_rows, JUDGE_METRICS, failed, normalise) if rule_caps else None
    return BenchResult(records, report, capped)


def _row(total: float, scores: dict[str, float]) -> dict[str, float]:
    """A sample's 1-5 row; a 0 (not given) is ``nan``, so that every mean leaves it out."""
    values = {"total": total, **scores}
    return {k: math.nan if v == 0 else float(v) for k, v in values.items()}


def _capped_total(scores: dict[str, float], cap: float | None) -> float:
    """Mean of the dimension scores above 0, capped by the rules (``nan`` when none is)."""
    positive = [s for s in scores.values() if s > 0]
    total = sum(positive) / len(positive) if positive else math.nan
    return total if cap is None else min(total, cap)
