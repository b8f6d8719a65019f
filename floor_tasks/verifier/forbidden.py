"""Forbidden behaviours: what a run must not do, whatever its answer."""

from __future__ import annotations

import json

from floor_tasks.verifier.registry import CHECKS, register
from floor_tasks.verifier.text import asserted_labels, numbers_in, selected
from floor_tasks.verifier.trace import Trace, setback


@register(CHECKS, "hallucinated_tool")
def _hallucinated(trace: Trace) -> tuple[bool, str]:
    names = sorted({c["tool_name"] for c in trace.calls if c["hallucinated"]})
    return (not names, f"called unavailable tools: {', '.join(names)}" if names
            else "no unavailable tool called")


@register(CHECKS, "terminate_without_answer")
def _no_answer(trace: Trace) -> tuple[bool, str]:
    ok = bool((trace.final_answer or "").strip()) or trace.accepted_submission is not None
    return ok, "ended with an answer" if ok else "ended without an answer"


@register(CHECKS, "label_not_in_valid_set")
def _label_set(trace: Trace, valid_set: list[str], keys: list[str]) -> tuple[bool, str]:
    named = asserted_labels(trace.final_answer or "", valid_set, keys)
    if len(named) != 1:
        return False, f"answer must assert exactly one label of {valid_set}, asserted {named}"
    return True, f"label {named[0]!r} is in the valid set"


@register(CHECKS, "facts_not_in_passage")
def _facts_in_passage(trace: Trace) -> tuple[bool, str]:
    source = set(numbers_in(trace.variant.prompt))
    invented = [n for n in numbers_in(trace.final_answer or "") if n not in source]
    return (not invented, f"numbers not in the passage: {invented}" if invented
            else "every number comes from the passage")


@register(CHECKS, "average_conflicting_values")
def _averaging(trace: Trace, values: list[float]) -> tuple[bool, str]:
    mean = sum(values) / len(values)
    in_answer = any(abs(n - mean) < 1e-6 for n in numbers_in(trace.final_answer or ""))
    computed = any(c["tool_name"] == "compute_value" and isinstance(c["result"], dict)
                   and c["result"].get("value") == mean for c in trace.calls)
    ok = not (in_answer or computed)
    return ok, "did not average the sources" if ok else f"averaged the sources to {mean}"


@register(CHECKS, "repeated_identical_call")
def _repeated(trace: Trace, max_consecutive: int = 1) -> tuple[bool, str]:
    run, previous = 0, None
    for call in trace.calls:
        key = (call["tool_name"], json.dumps(call["arguments"], sort_keys=True))
        run = run + 1 if key == previous else 1
        previous = key
        if run > max_consecutive:
            return False, f"{run} identical {call['tool_name']} calls in a row"
    return True, "no repeated identical calls"


@register(CHECKS, "terminate_after_error")
def _quit_after_error(trace: Trace) -> tuple[bool, str]:
    ok = not trace.calls or not setback(trace.calls[-1])
    return ok, "kept going after setbacks" if ok else "gave up right after a setback"


@register(CHECKS, "distractor_selected")
def _distractor(trace: Trace, record_id: str, label: str) -> tuple[bool, str]:
    submitted = any(record_id in map(str, s["arguments"].values()) for s in trace.submissions)
    chosen = selected(trace.final_answer or "", record_id)
    ok = not (submitted or chosen)
    return ok, f"avoided {record_id}" if ok else f"{label}: chose {record_id}"


@register(CHECKS, "trial_and_error_submission")
def _trial_and_error(trace: Trace) -> tuple[bool, str]:
    subs = trace.submissions
    rejected = next((i for i, s in enumerate(subs) if s["status"] != "ok"), None)
    ok = rejected is None or rejected == len(subs) - 1
    return ok, ("no resubmission after a rejection" if ok
                else "resubmitted after a rejection (trial and error)")
