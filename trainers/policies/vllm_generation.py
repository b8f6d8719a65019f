"""A thin vLLM generation path for LM policies on a GPU (``--generation vllm``).

One vLLM engine serves the team's base with LoRA enabled; each agent samples through its own
``LoRARequest``. An adapter is re-saved (``save_pretrained``) to a new folder, under a new LoRA id
so that vLLM loads it afresh, whenever its weights changed since the last save: after each
agent's update. Scoring, updates and checkpoints stay with transformers. vLLM is imported on
first use, with an install hint; it is never installed here, so only the bookkeeping is tested.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["VLLMGeneration"]

_VLLM_HINT = "--generation vllm needs vLLM on a CUDA machine: pip install vllm"
ENGINE_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
"""``max_lora_rank`` values every vLLM release with LoRA accepts; the agents' rank is rounded up
to one (an adapter of a smaller rank loads under a larger maximum)."""


class VLLMGeneration:
    """vLLM sampling for the LoRA agents of one base model.

    Args:
        model: The base model's local directory.
        workdir: Where adapters are saved for vLLM to load; by default a temporary folder,
            removed when this object is collected or the process ends.
        max_lora_rank: The agents' LoRA rank (rounded up to one of :data:`ENGINE_RANKS`).
        max_loras: Adapters held on the GPU at once (the team size).
        gpu_memory_utilization: Share of GPU memory vLLM may take (the rest is for training).
    """

    def __init__(self, model: str, workdir: str | Path | None = None, *, max_lora_rank: int,
                 max_loras: int, gpu_memory_utilization: float = 0.4) -> None:
        self._scratch = None if workdir else tempfile.TemporaryDirectory(prefix="agentworld-vllm-")
        self.model = model
        self.workdir = Path(workdir or self._scratch.name)
        if max_lora_rank > ENGINE_RANKS[-1]:
            raise ValueError(f"vLLM serves LoRA ranks up to {ENGINE_RANKS[-1]}, not "
                             f"{max_lora_rank}")
        rank = next(r for r in ENGINE_RANKS if r >= max_lora_rank)
        self.options = {"enable_lora": True, "max_lora_rank": rank,
                        "max_loras": max_loras,
                        "gpu_memory_utilization": gpu_memory_utilization}
        self._engine: Any = None
        self._saved: dict[str, tuple[list[Any], tuple[int, ...], int, Path]] = {}
        self._next_id = 1

    @property
    def engine(self) -> Any:
        """The vLLM ``LLM``, started on first use."""
        if self._engine is None:
            try:
                import vllm
            except ImportError as exc:
                raise ImportError(_VLLM_HINT) from exc
            self._engine = vllm.LLM(model=self.model, **self.options)
        return self._engine

    def adapter(self, policy: Any) -> tuple[int, Path]:
        """The LoRA id and folder of ``policy``'s adapter as last saved, saving it again (new id,
        new folder, the old one removed) if its weights changed since: every in-place update
        of a tensor bumps its version counter, and a new adapter under an old name (a
        replacement) has other tensors, which the saved record holds so none can reuse them."""
        weights = policy.trainable_parameters()
        stamp = tuple(p._version for p in weights)
        saved = self._saved.get(policy.adapter)
        same = saved is not None and len(saved[0]) == len(weights) and all(
            a is b for a, b in zip(saved[0], weights, strict=True)) and saved[1] == stamp
        if not same:
            folder = self.workdir / policy.adapter / f"v{self._next_id}"
            folder.parent.mkdir(parents=True, exist_ok=True)
            policy.save_adapter(folder)
            if saved is not None:
                shutil.rmtree(saved[3], ignore_errors=True)
            self._saved[policy.adapter] = saved = (weights, stamp, self._next_id, folder)
            self._next_id += 1
        return saved[2], saved[3]

    def generate(self, policy: Any, prompts: Sequence[list[int]], greedy: bool,
                 seed: int) -> list[list[int]]:
        """Generated token ids for each prompt with ``policy``'s adapter and sampling settings
        (stop strings are left to the policy, which cuts the tokens itself). Prompt ``i`` is
        drawn with seed ``seed + i``: vLLM gives each request a generator of its own seed, so
        one seed for all would give a group's equal prompts equal messages."""
        engine = self.engine
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.lora.request import LoRARequest

        lora_id, folder = self.adapter(policy)
        params = [SamplingParams(
            n=1, max_tokens=policy.max_new_tokens, seed=seed + i,
            temperature=0.0 if greedy else policy.temperature, top_p=policy.top_p,
            top_k=policy.top_k or -1, stop=list(policy.stop) or None)
            for i in range(len(prompts))]
        outputs = engine.generate([TokensPrompt(prompt_token_ids=p) for p in prompts],
                                  params, lora_request=LoRARequest(policy.adapter, lora_id,
                                                                   str(folder)))
        return [list(output.outputs[0].token_ids) for output in outputs]
