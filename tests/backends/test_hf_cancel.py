"""HFBackend.cancel: a call its caller gave up on stops decoding at the step under way, raises,
and leaves nothing behind (no kept answer, no flag on later calls)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import BackendError, ChatRequest, Completion, SamplingParams
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.protocol.chat import Fault
from agentworld_envs.sim.model_client import ModelClient
from tests.helpers.forward_passes import ForwardPasses

PROMPTS = [[{"role": "user", "content": "hi"}],
           [{"role": "user", "content": "lookup order 42 status"}]]
LONG = 24
"""New tokens asked for: the tiny model writes no end token before them on these prompts."""
CANCEL_AT = 3
"""The forward pass during which the call is cancelled."""

PATHS = {
    "drafted": ({"greedy_memo": 16}, SamplingParams(max_tokens=LONG), 1),
    "ragged": ({"draft": "none"}, SamplingParams(max_tokens=LONG), 2),
    "ragged sampled": ({}, SamplingParams(max_tokens=LONG, temperature=1.0, seed=3), 2),
    "generate": ({"draft": "none"}, SamplingParams(max_tokens=LONG), 1),
    "generate settings": ({}, SamplingParams(max_tokens=LONG,
                                             extra={"min_new_tokens": LONG}), 2),
    "static cache": ({"cache": "static"}, SamplingParams(max_tokens=LONG), 1),
}


@pytest.mark.parametrize("path", PATHS)
def test_a_cancelled_call_stops_at_the_step_under_way_and_keeps_nothing(
        tiny_lm_dir: Path, path: str) -> None:
    settings, sampling, rows = PATHS[path]
    backend = HFBackend(str(tiny_lm_dir), **settings)
    requests = [ChatRequest(PROMPTS[i], sampling=sampling) for i in range(rows)]
    passes = ForwardPasses(backend._model, CANCEL_AT, backend.cancel)
    try:
        with pytest.raises(BackendError, match="cancelled"):
            backend.complete(requests)
    finally:
        passes.remove()
    assert passes.count == CANCEL_AT  # no forward pass after the cancel
    # the next call is not cancelled, and no cut-short answer was kept for it
    again = backend.complete(requests)
    assert [c.usage.output_tokens for c in again] == [LONG] * rows
    assert {c.finish_reason for c in again} == {"length"}


def test_complete_each_answers_a_cancelled_call_with_its_error_in_every_place(
        tiny_lm_dir: Path) -> None:
    backend = HFBackend(str(tiny_lm_dir))
    requests = [ChatRequest(p, sampling=SamplingParams(max_tokens=LONG)) for p in PROMPTS]
    passes = ForwardPasses(backend._model, CANCEL_AT, backend.cancel)
    try:
        outcomes = backend.complete_each(requests)
    finally:
        passes.remove()
    assert [isinstance(o, BackendError) and "cancelled" in str(o) for o in outcomes] == [
        True, True]


def test_a_timed_out_call_stops_decoding_and_frees_the_model(tiny_lm_dir: Path) -> None:
    """The simulator's client gives up (its timeout) while a pass is held; once released, the
    abandoned call runs no further pass, so the next call does not queue behind it."""
    backend = HFBackend(str(tiny_lm_dir), draft="none")
    held, ended = threading.Event(), threading.Event()
    calls: list[Any] = []
    complete_each = backend.complete_each

    def watched(requests: Any) -> Any:
        try:
            calls.append(complete_each(requests))
            return calls[-1]
        finally:
            ended.set()

    backend.complete_each = watched  # type: ignore[method-assign]
    # held at the first pass, so the client's timeout fires however slow the machine is
    passes = ForwardPasses(backend._model, 1, lambda: held.wait(60))
    client = ModelClient(backend, timeout_s=0.05)
    try:
        request = ChatRequest(PROMPTS[1], sampling=SamplingParams(max_tokens=LONG))
        faults = client.complete([request, request])
        assert [f.kind for f in faults if isinstance(f, Fault)] == ["timeout", "timeout"]
        held.set()
        assert ended.wait(60)
        assert passes.count <= 1  # none after the held one (24 before cancelling existed)
        assert all(isinstance(o, BackendError) for o in calls[0])
        client.timeout_s = None
        (answer,) = client.complete([ChatRequest(PROMPTS[0], sampling=SamplingParams(
            max_tokens=4))])
        assert isinstance(answer, Completion) and answer.usage.output_tokens == 4
    finally:
        held.set()
        passes.remove()
        client.close()


def test_closing_the_backend_cancels_the_call_in_flight(tiny_lm_dir: Path) -> None:
    backend = HFBackend(str(tiny_lm_dir), draft="none")
    passes = ForwardPasses(backend._model, CANCEL_AT, backend.close)
    try:
        with pytest.raises(BackendError, match="cancelled"):
            backend.complete([ChatRequest(PROMPTS[1], sampling=SamplingParams(max_tokens=LONG))])
    finally:
        passes.remove()
    assert passes.count == CANCEL_AT


@pytest.mark.parametrize("draft", ["prompt", "none"])
def test_a_call_cancelled_in_its_prefill_prefills_no_other_prompt(
        tiny_lm_dir: Path, draft: str) -> None:
    backend = HFBackend(str(tiny_lm_dir), draft=draft)
    passes = ForwardPasses(backend._model, 1, backend.cancel)
    try:
        with pytest.raises(BackendError, match="cancelled"):
            backend.complete([ChatRequest(p, sampling=SamplingParams(max_tokens=LONG))
                              for p in PROMPTS])
    finally:
        passes.remove()
    assert passes.count == 1  # the first prompt's prefill, not the second's
