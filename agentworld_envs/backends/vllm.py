"""Offline vLLM backend: a thin wrapper over ``vllm.LLM.chat``.

vllm is imported when a backend is built, never at package import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from agentworld_envs.backends.base import Backend
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.protocol.chat import ChatRequest, Completion, Usage

__all__ = ["VLLMBackend"]

_HINT = 'the "vllm" backend needs vllm: pip install "agentworld[vllm]"'


class VLLMBackend(Backend):
    """A model served in-process by ``vllm.LLM``.

    Args:
        model: Model name or local directory.
        enable_thinking: Passed to the chat template when not None.
        **engine_kwargs: Passed to ``vllm.LLM`` (``tensor_parallel_size``,
            ``gpu_memory_utilization``, ``max_model_len``, ...).

    ``SamplingParams.extra`` may hold ``chat_template_kwargs``; its other keys are passed to
    ``vllm.SamplingParams`` (e.g. ``repetition_penalty``), over the fields set from the request's
    own (``top_k`` None or 0: every token).
    """

    name = "vllm"
    forwards_to = ("vllm:LLM", "vllm.engine.arg_utils:EngineArgs")
    """Where ``engine_kwargs`` go, for the config check of
    :func:`~agentworld_envs.backends.check_backend_config` (which, without vllm, fails with
    ``install_hint``)."""
    install_hint = _HINT

    def __init__(self, model: str, enable_thinking: bool | None = None, **engine_kwargs: Any):
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(_HINT) from exc
        self.model = model
        self.enable_thinking = enable_thinking
        self.engine_kwargs = engine_kwargs
        self._vllm = vllm
        self._llm = vllm.LLM(model=model, **engine_kwargs)

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata."""
        return {
            "name": self.name,
            "model": self.model,
            "enable_thinking": self.enable_thinking,
            "engine_kwargs": dict(self.engine_kwargs),
        }

    def close(self) -> None:
        """Drop the engine."""
        self._llm = None

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Generate for every request; one ``LLM.chat`` call per distinct tool list."""
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            key = json.dumps(
                [request.tools, request.sampling.extra.get("chat_template_kwargs")],
                sort_keys=True,
            )
            groups.setdefault(key, []).append(i)
        results: list[Completion | None] = [None] * len(requests)
        for indices in groups.values():
            batch = self._chat([requests[i] for i in indices])
            for i, completion in zip(indices, batch, strict=True):
                results[i] = completion
        return results  # type: ignore[return-value]

    def _chat(self, requests: list[ChatRequest]) -> list[Completion]:
        template_kwargs = dict(requests[0].sampling.extra.get("chat_template_kwargs") or {})
        if self.enable_thinking is not None:
            template_kwargs.setdefault("enable_thinking", self.enable_thinking)
        start = time.perf_counter()
        outputs = self._llm.chat(
            [r.messages for r in requests],
            sampling_params=[self._sampling(r) for r in requests],
            use_tqdm=False,
            tools=requests[0].tools or None,
            chat_template_kwargs=template_kwargs or None,
        )
        latency_s = time.perf_counter() - start
        completions = []
        for output in outputs:
            choice = output.outputs[0]
            completions.append(Completion(
                text=choice.text,
                tool_calls=text_tool_calls(choice.text),
                finish_reason=choice.finish_reason or "stop",
                usage=Usage(
                    input_tokens=len(output.prompt_token_ids or []),
                    output_tokens=len(choice.token_ids),
                ),
                latency_s=latency_s,
                raw={"token_ids": list(choice.token_ids)},
            ))
        return completions

    def _sampling(self, request: ChatRequest) -> Any:
        sampling = request.sampling
        fields = {
            "temperature": sampling.temperature,
            "top_p": 1.0 if sampling.top_p is None else sampling.top_p,
            "top_k": sampling.top_k or -1,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed,
            "stop": list(sampling.stop) or None,
        }
        fields.update((k, v) for k, v in sampling.extra.items() if k != "chat_template_kwargs")
        return self._vllm.SamplingParams(**fields)
