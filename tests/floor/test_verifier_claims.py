"""The README's claims about reading final answers, held to the letter.

Label tasks (A01, A04) pass only if the answer asserts exactly the gold label: a keyed or
headline statement that lists several labels, or offers another after "or", hedges and fails.
A boolean (D4's ``certified``) is read from the value written after its key before any
negation heuristic, so "certified: false" or "Is it certified? No" does not state true.
"""

from __future__ import annotations

import pytest

from floor_tasks import load_task, solution
from floor_tasks.verifier import asserted_labels, field_matches
from tests.helpers.floor_play import play_to_verdict

A01 = (["bug", "feature_request", "billing", "access_issue"], ["label", "category"])
A04 = (["positive", "negative", "mixed"], ["sentiment"])


verdict = play_to_verdict


# ---------------------------------------------------------------- label tasks

@pytest.mark.parametrize("task_id, answer", [
    # a scripted placeholder backend echoes the prompt: it lists every label after the key
    ("A01", "Assign this support ticket to exactly one category: bug, feature_request, billing "
            "or access_issue."),
    ("A01", "category: bug, or possibly feature_request or access_issue - can't tell"),
    ("A01", "Category: bug, billing"),
    ("A01", "Category: bug (or maybe billing)."),
    ("A04", "sentiment: mixed, positive or negative"),
    ("A04", "Sentiment: mixed, or maybe negative."),
    ("A04", "Mixed, positive or negative? Hard to say."),
])
def test_a_statement_listing_labels_hedges_and_fails(task_id: str, answer: str) -> None:
    result = verdict(task_id, [answer])
    assert not result["passed"]
    assert {"final_answer", "label_not_in_valid_set"} <= set(result["failure_labels"]), result


@pytest.mark.parametrize("task_id", ["A01", "A04"])
def test_an_echoed_prompt_passes_no_variant(task_id: str) -> None:
    task = load_task(task_id)
    for variant in task.variant_names:
        result = verdict(task_id, [task.variant(variant).prompt], variant)
        assert not result["passed"], (variant, result)


@pytest.mark.parametrize("task_id, answer", [
    ("A01", "Category: bug"),
    ("A01", "**Category:** bug"),
    ("A01", "Category: bug, since other users on the same network see it too."),
    ("A01", "Category: bug (the dashboard is blank for everyone)."),
    ("A01", "Label: bug, and definitely not billing."),
    ("A01", "Category: bug (it is not an access_issue: other users see it too)."),
    ("A04", "Sentiment: mixed, positive about the hardware, negative about the software."),
    ("A04", "Mixed, positive about the hardware and negative about the software."),
    ("A04", "Sentiment: mixed (positive and negative)."),
    ("A04", "Mixed, leaning negative."),
])
def test_a_keyed_or_headline_label_with_an_explanation_passes(task_id: str, answer: str) -> None:
    result = verdict(task_id, [answer])
    assert result["passed"], result


def test_asserted_labels_lists_every_alternative_in_order() -> None:
    assert asserted_labels("category: bug, feature_request, billing or access_issue", *A01) == [
        "bug", "feature_request", "billing", "access_issue"]
    assert asserted_labels("Positive, negative or mixed? Hard to say.", *A04) == [
        "positive", "negative", "mixed"]
    assert asserted_labels("Category: bug (not billing).", *A01) == ["bug"]


# ---------------------------------------------------------------- booleans (D4)

@pytest.mark.parametrize("answer", [
    "P201: certified: false",
    "P201: certified = false",
    "The record is P201. Is it certified? No: the record says it is not certified.",
    "Is P201 certified? The record says it is not certified.",
    "Record P201, **Certified:** No",
    'P201, "certified": "false"',
])
def test_d4_a_false_value_after_the_key_fails(answer: str) -> None:
    result = verdict("D4", solution("D4")[:-1] + [answer])
    assert not result["passed"] and result["failure_labels"] == ["final_answer"], result


@pytest.mark.parametrize("answer", [
    "P201: certified = true",
    "P201: certified: yes",
    "Record P201. Is it certified? Yes.",
    "P201 (Alpha Sensor Pro) is certified; P202 (Alpha Sensor Lite) is not certified.",
    '{"record_id": "P201", "certified": true}',
])
def test_d4_a_true_value_passes(answer: str) -> None:
    result = verdict("D4", solution("D4")[:-1] + [answer])
    assert result["passed"], result


def test_every_d4_solution_passes() -> None:
    for variant in load_task("D4").variant_names:
        assert verdict("D4", solution("D4", variant), variant)["passed"], variant


@pytest.mark.parametrize("text, expected, how", [
    ("certified = false", True, None),
    ("certified = false", False, "strict"),
    ("certified? no", False, "strict"),
    ("it is certified", True, "strict"),
    ("it is not certified", False, "strict"),
    ("is it certified?", True, None),
    ("is it certified?", False, None),
])
def test_field_matches_reads_the_written_boolean(text: str, expected: bool,
                                                 how: str | None) -> None:
    assert field_matches(text, "certified", expected) == how


def test_megabytes_of_hedges_and_questions_are_read() -> None:
    """Their time per byte is measured in tests/bench/test_bench_parsing.py."""
    labels = "category: unclear, or maybe not a bug; " * 25_000  # about 1 MB
    booleans = "certified? certified = false, " * 35_000
    assert asserted_labels(labels, *A01) == []
    assert field_matches(booleans, "certified", True) is None
