"""An interrupted ``explore_corpus`` resumes into the corpus an uninterrupted call writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor_tasks.harness.corpus import RunCorpus
from trainers.world_model.explore import explore_corpus


def test_an_interrupted_exploration_resumes_with_no_lost_or_repeated_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the second call stopped at once: ``ValueError: run 'explore|A01|v0|0' is
    already in .../runs.jsonl``."""
    whole = explore_corpus(tmp_path / "whole", repeats=1, seed=3, mistakes=0.3)
    expected = [(r.run_id, r.trajectory) for r in RunCorpus(whole).records()]
    append = RunCorpus.append

    def interrupted(corpus: RunCorpus, record: object) -> None:
        if len(corpus.done_ids()) == 40:
            raise KeyboardInterrupt
        append(corpus, record)

    monkeypatch.setattr(RunCorpus, "append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        explore_corpus(tmp_path / "resumed", repeats=1, seed=3, mistakes=0.3)
    monkeypatch.setattr(RunCorpus, "append", append)
    resumed = explore_corpus(tmp_path / "resumed", repeats=1, seed=3, mistakes=0.3)
    assert 40 < len(expected)
    assert [(r.run_id, r.trajectory) for r in RunCorpus(resumed).records()] == expected
