"""The team benchmark's ``AGENTWORLD_BASELINE``: unset, the benchmark is skipped with the
reason; a path that is no checkout of the project fails it with the path in one line (it ran
this checkout's installed code as the baseline, or raised from ``subprocess``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.test_bench_team import baseline_checkout

ROOT = Path(__file__).resolve().parents[2]


def test_unset_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTWORLD_BASELINE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="set AGENTWORLD_BASELINE"):
        baseline_checkout()


@pytest.mark.parametrize("where", ["missing", "empty folder", "a checkout's trainers"])
def test_a_path_that_is_no_checkout_fails_naming_it(where: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = {"missing": tmp_path / "before", "empty folder": tmp_path,
            "a checkout's trainers": ROOT / "trainers"}[where]
    monkeypatch.setenv("AGENTWORLD_BASELINE", str(path))
    with pytest.raises(pytest.fail.Exception, match="not a checkout of the project") as failed:
        baseline_checkout()
    assert str(path) in str(failed.value) and "\n" not in str(failed.value)


def test_a_checkout_is_its_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTWORLD_BASELINE", str(ROOT / "trainers" / ".."))
    assert baseline_checkout() == ROOT
