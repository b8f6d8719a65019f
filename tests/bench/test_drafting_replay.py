"""The drafting benchmark's draft-length replay on the tiny model: its recorder takes the
decoder's calls as the ``hf`` backend makes them, and the replay of the default rule is the
decoder's own pass for pass (``tests/bench/test_bench_drafting.py::test_draft_length_rules``
checks this on the embedded model, outside the default run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.drafting import DraftedDecoder
from agentworld_envs.backends.hf import HFBackend
from tests.bench.test_bench_drafting import DRAFT_RULES, _replay, recording

CHATS = [[{"role": "user", "content": "count: one two three one two three one two three"}],
         [{"role": "user", "content": '{"id": "P104", "name": "lookup_record"} {"id": "P1'}]]


def test_the_replay_records_the_backends_decode_calls(tiny_lm_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(DraftedDecoder, "decode", recording(DraftedDecoder.decode, calls))
    backend = HFBackend(str(tiny_lm_dir), batch_size=2)
    out = backend.complete([ChatRequest(chat, sampling=SamplingParams(max_tokens=24))
                            for chat in CHATS])
    assert len(calls) == 1
    assert [len(answer) for answer in calls[0]["answers"]] == [
        c.usage.output_tokens for c in out]
    _, rows = _replay(calls[0], DRAFT_RULES["default"], lambda rows, width: 1.0)
    assert rows == [tuple(stats) for stats in calls[0]["stats"]]
    assert sum(stats[1] for stats in rows) > 0  # drafts were proposed and replayed
