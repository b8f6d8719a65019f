"""Build backends from plain data: ``{"name": "openai", "model": "...", ...}``.

Backend modules are imported only when their name is asked for, so heavy libraries load lazily.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from agentworld_envs.backends.base import Backend
from agentworld_envs.cli_errors import UnknownNameError, UsageError

__all__ = ["BackendConfigError", "make_backend", "parse_backend_arg", "register_backend"]

_BUILTIN = {
    "openai": "agentworld_envs.backends.openai_compat:OpenAIBackend",
    "hf": "agentworld_envs.backends.hf:HFBackend",
    "vllm": "agentworld_envs.backends.vllm:VLLMBackend",
    "replay": "agentworld_envs.backends.replay:ReplayBackend",
    "embedded": "agentworld_envs.models:embedded_world_model",
}
_REGISTRY: dict[str, str | Callable[..., Backend]] = dict(_BUILTIN)


class BackendConfigError(UsageError, ValueError):
    """A backend config that is not JSON, has no ``name``, or does not fit its backend's
    constructor (a missing or unknown argument)."""


def register_backend(name: str, factory: str | Callable[..., Backend]) -> None:
    """Register a backend factory (a callable or a ``"module:attr"`` string) under ``name``."""
    _REGISTRY[name] = factory


def make_backend(config: str | dict[str, Any] | Backend) -> Backend:
    """Build a backend from its name or a config dict whose ``name`` picks the backend.

    A live :class:`Backend` is returned as is.

    Raises:
        UnknownNameError: no backend is registered under the name.
        BackendConfigError: an argument the backend needs is missing, or one it has no use for
            is given (checked before the backend is built).
    """
    if isinstance(config, Backend):
        return config
    if isinstance(config, str):
        config = {"name": config}
    options = dict(config)
    name = options.pop("name", None)
    factory = _REGISTRY[_known(name)]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise BackendConfigError(f"backend {name!r}: {exc}") from None
    return factory(**options)


def _known(name: object) -> str:
    """``name`` if a backend is registered under it.

    Raises:
        UnknownNameError: (a ``ValueError``) naming the nearest registered names.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise UnknownNameError("backend", name, sorted(_REGISTRY))
    return name


def parse_backend_arg(value: str) -> dict[str, Any]:
    """Read a command-line backend: a name (``oracle``) or a JSON object with a ``name``.

    Raises:
        BackendConfigError: the JSON is invalid or has no ``name`` (both are ``ValueError``);
            an :class:`UnknownNameError` when no backend is registered under the name.
    """
    if not value.lstrip().startswith("{"):
        return {"name": _known(value)}
    try:
        config = json.loads(value)
    except json.JSONDecodeError as exc:
        raise BackendConfigError(f"backend is not valid JSON: {exc}") from None
    if not isinstance(config, dict) or "name" not in config:
        raise BackendConfigError('a backend given as JSON needs a "name" field')
    _known(config["name"])
    return config
