"""Ray, imported lazily with an install hint, and the runtime the vector env runs on."""

from __future__ import annotations

from typing import Any

__all__ = ["connect", "import_ray"]

_HINT = 'RayVectorEnv needs ray: pip install "agentworld[ray]"'


def import_ray() -> Any:
    """Import ``ray``, or say how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return ray


def connect() -> Any:
    """The connected Ray runtime (the user's ``ray.init(address=...)``), else a local one."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init()
    return ray
