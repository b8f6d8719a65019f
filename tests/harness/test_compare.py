"""Corpus comparison: tier and task drops, flipped cases, identical corpora."""

from __future__ import annotations

from floor_tasks.harness.compare import compare_corpora
from floor_tasks.harness.record import RunRecord
from tests.helpers.records import synthetic_record


def run(task_id: str, passed: bool, model: str = "m", repeat: int = 0) -> RunRecord:
    """A synthetic run record (tier = the task id's letter); a failed one is F5."""
    return synthetic_record(task_id, task_id[0], passed, model, repeat)


def corpus(failing: set[tuple[str, int]] = frozenset(), model: str = "m") -> list[RunRecord]:
    """Tiers B and C, five tasks each, two repeats; ``failing`` lists (task_id, repeat)."""
    return [run(f"{tier}{i}", (f"{tier}{i}", r) not in failing, model, repeat=r)
            for tier in "BC" for i in range(1, 6) for r in range(2)]


def test_identical_corpora_pass() -> None:
    result = compare_corpora(corpus(), corpus())
    assert result.ok and result.regressions == []
    assert result.cases_compared == 20
    assert result.render().startswith("OK: no regressions (20 cases compared")


def test_tier_drop_and_flipped_cases_are_flagged() -> None:
    new = corpus(failing={("C1", 0), ("C2", 0), ("C3", 1)})
    result = compare_corpora(corpus(), new)
    assert not result.ok
    kinds = [(r.kind, r.key) for r in result.regressions]
    assert kinds[0] == ("tier", "C")
    assert ("task", "C1") in kinds and ("task", "C3") in kinds
    assert [k for k in kinds if k[0] == "case"] == [
        ("case", "C1/v0/0"), ("case", "C2/v0/0"), ("case", "C3/v0/1")]
    text = result.render()
    assert text.startswith("FAIL: 7 regression(s)")
    assert "tier C: pass rate 10/10 100% -> 7/10 70% (-30 pp)" in text
    assert "case C3/v0/1: passed in BASE, fails in NEW (F5)" in text


def test_single_flip_below_threshold_still_fails_as_a_case() -> None:
    base = corpus() + [run(f"D{i}", True, repeat=r) for i in range(1, 6) for r in range(4)]
    new = corpus() + [run(f"D{i}", (i, r) != (1, 0), repeat=r) for i in range(1, 6)
                      for r in range(4)]
    result = compare_corpora(base, new, threshold=0.30)
    assert [(r.kind, r.key) for r in result.regressions] == [("case", "D1/v0/0")]


def test_improvements_and_known_failures_are_not_regressions() -> None:
    base = corpus(failing={("B1", 0), ("B2", 1)})
    new = corpus(failing={("B1", 0)})
    assert compare_corpora(base, new).ok


def test_single_model_corpora_match_across_slugs() -> None:
    result = compare_corpora(corpus(model="qwen"), corpus({("B4", 1)}, model="qwen+nothink"))
    assert [(r.kind, r.key) for r in result.regressions] == [("task", "B4"), ("case", "B4/v0/1")]
    assert result.notes == ["comparing qwen (BASE) with qwen+nothink (NEW)"]


def test_multi_model_corpora_compare_model_by_model() -> None:
    base = corpus(model="a") + corpus(model="b") + corpus(model="gone")
    new = corpus(model="a") + corpus({("B5", 0)}, model="b")
    result = compare_corpora(base, new)
    assert [(r.kind, r.key, r.model) for r in result.regressions] == [
        ("task", "B5", "b"), ("case", "B5/v0/0", "b")]
    assert "models only in BASE, not compared: gone" in result.notes
    assert "case B5/v0/0 [b]" in result.render()


def test_missing_cases_fail_unless_allowed() -> None:
    new = [r for r in corpus() if r.repeat == 0]
    result = compare_corpora(corpus(), new)
    assert not result.ok and result.regressions == [] and result.cases_missing == 10
    assert result.render().startswith("FAIL: 10 BASE case(s) missing from NEW")
    assert result.notes == ["10 BASE case(s) have no run in NEW"]
    assert compare_corpora(corpus(), new, allow_missing=True).ok


def test_nothing_compared_fails() -> None:
    for new in ([], [run("D1", True)]):  # empty, disjoint
        result = compare_corpora(corpus(), new, allow_missing=True)
        assert not result.ok and result.cases_compared == 0
        assert result.render().startswith("FAIL: no case compared (0 cases compared")


def test_a_model_only_in_base_counts_as_missing() -> None:
    result = compare_corpora(corpus(model="a") + corpus(model="gone"),
                             corpus(model="a") + corpus(model="b"))
    assert not result.ok and result.cases_missing == 20
    assert compare_corpora(corpus(model="a") + corpus(model="gone"),
                           corpus(model="a") + corpus(model="b"), allow_missing=True).ok


def test_pass_rates_compare_only_the_cases_both_corpora_ran() -> None:
    """NEW ran two more repeats of C1, which fail: tier C's rate fell by 17 pp over all of
    NEW's runs, a regression though no case BASE ran got worse."""
    new = corpus() + [run("C1", False, repeat=r) for r in (2, 3)]
    result = compare_corpora(corpus(), new)
    assert result.ok, result.render()
    assert result.cases_compared == 20
    assert "2 NEW case(s) have no run in BASE: left out of the pass rates" in result.notes
