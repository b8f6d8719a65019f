"""Answer checks: the final answer states what the task expects."""

from __future__ import annotations

import re
from typing import Any

from floor_tasks.verifier.registry import ANSWER_CHECKS, register
from floor_tasks.verifier.text import asserted_labels, field_matches, selected
from floor_tasks.verifier.trace import Trace


@register(ANSWER_CHECKS, "fields")
def _answer_fields(trace: Trace, expect: dict[str, Any]) -> tuple[bool, str]:
    text = trace.final_answer or ""
    weak = []
    for key, value in expect.items():
        how = field_matches(text, key, value)
        if how is None:
            return False, f"answer does not state {key} = {value!r}"
        if how == "weak":
            weak.append(key)
    expected_ids = {v for v in expect.values() if isinstance(v, str) and v in trace.db.records}
    also = sorted(i for i in trace.db.records if expected_ids and i not in expected_ids
                  and i.lower() in text.lower() and selected(text, i))
    if also:
        return False, f"answer also selects {', '.join(also)}"
    return True, "all fields stated" + (f" (weak match: {', '.join(weak)})" if weak else "")


@register(ANSWER_CHECKS, "label")
def _answer_label(trace: Trace, expect: str, valid_set: list[str],
                  keys: list[str]) -> tuple[bool, str]:
    labels = asserted_labels(trace.final_answer or "", valid_set, keys)
    ok = labels == [expect]
    return ok, f"answer asserts {expect!r}" if ok else f"answer asserts {labels}, not [{expect!r}]"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]*[^\W\d_])")
"""A full stop, question or exclamation mark, then a word in either case: "failed. the limiter"
is two sentences ("approx. 47 minutes" and "v2.4" are one)."""


@register(ANSWER_CHECKS, "coverage")
def _answer_coverage(trace: Trace, elements: dict[str, list[str]],
                     max_sentences: int) -> tuple[bool, str]:
    text = (trace.final_answer or "").lower()
    missing = [name for name, words in elements.items()
               if not any(w.lower() in text for w in words)]
    if missing:
        return False, f"summary misses: {', '.join(missing)}"
    sentences = [s for s in _SENTENCE_END.split(trace.final_answer.strip()) if s]
    if len(sentences) > max_sentences:
        return False, f"summary has {len(sentences)} sentences, at most {max_sentences} allowed"
    return True, "all required elements covered"
