"""World models shipped as package data.

``floor_wm/``: a small Qwen2-architecture world model trained from scratch on real AgentFloor
transitions (see its ``README.md`` for the data, the training run and its held-out fidelity).
It runs in-process on CPU through the ``hf`` backend, so a simulated ``floor`` env needs no
server and no GPU. Loading it needs the ``hf`` extra (torch, transformers).

Example:
    >>> floor_world_model_backend()["name"]
    'hf'
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld_envs.backends import Backend

__all__ = ["FLOOR_WORLD_MODEL_SAMPLING", "floor_world_model", "floor_world_model_backend",
           "floor_world_model_dir"]

FLOOR_WORLD_MODEL_SAMPLING = {"temperature": 0.0, "max_tokens": 512}
"""Sampling the shipped floor model was evaluated with: greedy, and a bound that fits its
longest observations (its answers end with an end-of-turn token well before it)."""


def floor_world_model_dir() -> Path:
    """The folder of the shipped floor world model (weights, tokenizer, model card)."""
    return Path(str(resources.files("agentworld_envs.models") / "floor_wm"))


def floor_world_model_backend(**overrides: Any) -> dict[str, Any]:
    """Plain-data ``hf`` backend config of the shipped floor world model (CPU, batches of 16).

    Keyword arguments override the config's fields, e.g. ``device="cuda:0"``.
    """
    return {"name": "hf", "model": str(floor_world_model_dir()), "device": "cpu",
            "batch_size": 16, **overrides}


def floor_world_model(**overrides: Any) -> Backend:
    """The shipped floor world model as a live ``hf`` backend (a ``make_backend`` factory).

    Registered under a name (``register_backend("floor_wm", "agentworld_envs.models:
    floor_world_model")``), it lets plain data such as ``backend="floor_wm"`` pick this model
    without naming a path. Needs the ``hf`` extra.
    """
    from agentworld_envs.backends.hf import HFBackend

    return HFBackend(**{k: v for k, v in floor_world_model_backend(**overrides).items()
                        if k != "name"})
