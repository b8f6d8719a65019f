"""The vLLM backend's sampling settings, against a stand-in ``vllm`` module (vllm is not
installed here)."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.vllm import VLLMBackend


class _Params:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class _LLM:
    def __init__(self, model: str, **engine_kwargs: Any) -> None:
        self.params: list[dict[str, Any]] = []

    def chat(self, conversations, sampling_params, **kwargs: Any) -> list[Any]:
        self.params += [p.kwargs for p in sampling_params]
        return [SimpleNamespace(prompt_token_ids=[0], outputs=[SimpleNamespace(
            text="ok", token_ids=(1,), finish_reason="stop")]) for _ in conversations]


def test_top_k_reaches_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=_LLM, SamplingParams=_Params))
    backend = VLLMBackend("m")
    backend.complete([ChatRequest([{"role": "user", "content": "x"}], sampling=sampling)
                      for sampling in (SamplingParams(temperature=0.6, top_k=20),
                                       SamplingParams(top_k=None), SamplingParams(top_k=0),
                                       SamplingParams(top_k=20, extra={"top_k": 5}))])
    assert [p["top_k"] for p in backend._llm.params] == [20, -1, -1, 5]  # -1: every token
