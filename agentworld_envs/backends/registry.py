"""Build backends from plain data: ``{"name": "openai", "model": "...", ...}``.

Backend modules are imported only when their name is asked for, so heavy libraries load lazily.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from agentworld_envs.backends.base import Backend
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING
from agentworld_envs.cli_errors import UnknownNameError, UsageError

__all__ = ["TRANSPORT", "BackendConfigError", "BackendUnavailableError", "answering_settings",
           "budget_defaults", "check_backend_config", "declared_sampling", "factory_defaults",
           "make_backend", "parse_backend_arg", "register_backend"]

_BUILTIN = {
    "openai": "agentworld_envs.backends.openai_compat:OpenAIBackend",
    "hf": "agentworld_envs.backends.hf:HFBackend",
    "vllm": "agentworld_envs.backends.vllm:VLLMBackend",
    "replay": "agentworld_envs.backends.replay:ReplayBackend",
    "embedded": "agentworld_envs.backends.embedded:embedded_world_model",
    "scripted": "agentworld_envs.backends.scripted:ScriptedBackend",
    "oracle": "floor_tasks.harness.agents:OracleBackend",
}
_REGISTRY: dict[str, str | Callable[..., Backend]] = dict(_BUILTIN)
_SAMPLING: dict[str, dict[str, Any]] = {"embedded": EMBEDDED_SAMPLING}
"""The sampling a registered backend's model was tuned for, where it declares one."""


_KEYED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_LISTED = 16
"""Most keys an unknown-key error lists."""


class BackendConfigError(UsageError, ValueError):
    """A backend config that is not JSON, has no ``name``, or does not fit its backend's
    constructor (a missing or unknown argument)."""


class BackendUnavailableError(BackendConfigError, ImportError):
    """A backend whose library is not installed here; the message says how to install it."""


def register_backend(name: str, factory: str | Callable[..., Backend],
                     sampling: dict[str, Any] | None = None) -> None:
    """Register a backend factory (a callable or a ``"module:attr"`` string) under ``name``,
    with the ``SamplingParams`` fields its model was tuned for, if any (an env asking this
    backend starts from them instead of the model card's; its own ``sampling`` still wins).

    A factory taking ``**kwargs`` may say where they go in a ``forwards_to`` attribute (a
    tuple of ``"module:attr"`` callables), so that a config's keys are checked against their
    keyword parameters too; where those cannot be imported, the config check fails with the
    factory's ``install_hint`` attribute, before the command makes anything. A factory's
    ``check_config`` attribute, called with a config's keys once they fit and the factory's
    defaults for the others, raises for a config that cannot work here (``replay``'s missing
    file, a value the backend refuses), so that check fails as early.
    """
    _REGISTRY[name] = factory
    if sampling is None:
        _SAMPLING.pop(name, None)
    else:
        _SAMPLING[name] = dict(sampling)


def declared_sampling(config: str | dict[str, Any] | Backend) -> dict[str, Any] | None:
    """The sampling fields the backend ``config`` names was registered with; None for a live
    backend or one registered without.

    Example:
        >>> declared_sampling("embedded"), declared_sampling({"name": "openai"})
        ({'temperature': 0.0, 'max_tokens': 768}, None)
    """
    name = config if isinstance(config, str) else (
        config.get("name") if isinstance(config, dict) else None)
    found = _SAMPLING.get(name) if isinstance(name, str) else None
    return dict(found) if found is not None else None


def _resolve(path: str) -> Callable[..., Any]:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def _keyed(factory: Callable[..., Any]) -> list[str]:
    return [p.name for p in inspect.signature(factory).parameters.values() if p.kind in _KEYED]


def _keys(name: str, factory: Callable[..., Any]) -> list[str] | None:
    """The config keys ``factory`` takes; None when it takes any (``**kwargs`` whose
    ``forwards_to`` it does not name).

    Raises:
        BackendUnavailableError: a ``forwards_to`` library is not installed.
    """
    keys = _keyed(factory)
    if all(p.kind != inspect.Parameter.VAR_KEYWORD
           for p in inspect.signature(factory).parameters.values()):
        return keys
    try:
        targets = [_resolve(t) for t in getattr(factory, "forwards_to", ())]
    except ImportError as exc:
        hint = getattr(factory, "install_hint", f"it needs {exc.name or 'a missing library'}")
        raise BackendUnavailableError(f"backend {name!r} cannot be built here: {hint}") from None
    return list(dict.fromkeys([*keys, *(k for t in targets for k in _keyed(t))])) if targets \
        else None


def _fit(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise :class:`BackendConfigError` unless ``options`` fit ``factory``: an unknown key
    is named with the nearest known one, then a missing required one."""
    keys = _keys(name, factory)
    for key in options if keys is not None else ():
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            nearest = f"; did you mean {close[0]!r}?" if close else ""
            listed = f" (its keys: {', '.join(keys)})" if len(keys) <= _LISTED else ""
            raise BackendConfigError(f"backend {name!r}: unknown key {key!r}{nearest}{listed}")
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise BackendConfigError(f"backend {name!r}: {exc}") from None


def _parsed(config: str | dict[str, Any]) -> tuple[str, Callable[..., Backend], dict[str, Any]]:
    """A config's registered name, its factory (imported) and its other options."""
    options = {"name": config} if isinstance(config, str) else dict(config)
    if "name" not in options:  # once "unknown backend None"
        raise BackendConfigError(f'a backend config needs a "name": one of '
                                 f'{", ".join(sorted(_REGISTRY))}')
    name = _known(options.pop("name"))
    factory = _REGISTRY[name]
    return name, _resolve(factory) if isinstance(factory, str) else factory, options


def check_backend_config(config: str | dict[str, Any]) -> None:
    """Check a backend config without building the backend (its heavy libraries stay
    unloaded): a registered ``name``, only keys its backend takes, every key it needs, and
    whatever its factory's ``check_config`` checks (a ``replay`` file that exists, the values
    of ``openai``'s and ``hf``'s settings).

    Raises:
        UnknownNameError: no backend is registered under the name (nearest ones named).
        BackendConfigError: an unknown key (the nearest known key named), a missing one, or a
            value the backend refuses (its ``check_config``'s ``ValueError``);
            :class:`BackendUnavailableError` (also an ``ImportError``) when the library the
            backend's keys go to is not installed.
        FileNotFoundError: a file the backend reads is not there (``replay``'s ``path``);
            the console script reports it as one line, exit status 2.

    Example:
        >>> try:
        ...     check_backend_config({"name": "openai", "model": "m", "baseurl": "http://h/v1"})
        ... except BackendConfigError as exc:
        ...     print(str(exc).split(" (")[0])
        backend 'openai': unknown key 'baseurl'; did you mean 'base_url'?
    """
    name, factory, options = _parsed(config)
    _fit(name, factory, options)
    check = getattr(factory, "check_config", None)
    if check is None:
        return
    try:
        check(**{**factory_defaults(factory), **options})
    except UsageError:
        raise
    except ValueError as exc:  # a value the backend refuses (``timeout_s: -1``)
        raise BackendConfigError(f"backend {name!r}: {exc}") from None


TRANSPORT = frozenset({"base_url", "api_key_env", "timeout_s", "max_retries", "backoff_s",
                       "max_retry_after_s", "concurrency", "jitter_seed", "replica_cooldown_s"})
"""Backend settings that do not change answers: a resumed run may change them."""


def answering_settings(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of a backend config decides its answers: all but its :data:`TRANSPORT` settings."""
    return None if config is None else {k: v for k, v in config.items() if k not in TRANSPORT}


def factory_defaults(factory: Callable[..., Any]) -> dict[str, Any]:
    """The keyword defaults of a backend factory (a class: its constructor's)."""
    return {p.name: p.default for p in inspect.signature(factory).parameters.values()
            if p.default is not inspect.Parameter.empty}


def budget_defaults(config: str | dict[str, Any] | Backend,
                    timeout_s: float | None) -> dict[str, Any]:
    """The ``make_backend`` defaults that give one call ``timeout_s`` in all: the whole of it,
    or for a backend that retries (its factory takes ``max_retries``) and so limits each
    attempt, an equal share per attempt (``timeout_s / (max_retries + 1)``), so that a stalled
    attempt is retried within the call's time.

    Example:
        >>> budget_defaults({"name": "openai", "model": "m", "max_retries": 1}, 60.0)
        {'timeout_s': 30.0}
    """
    if timeout_s is None or isinstance(config, Backend):
        return {"timeout_s": timeout_s}
    _, factory, options = _parsed(config)
    retrying = inspect.signature(factory).parameters.get("max_retries")
    retries = options.get("max_retries", retrying.default if retrying else 0)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        return {"timeout_s": timeout_s}  # the backend reports the bad value
    return {"timeout_s": timeout_s / (retries + 1)}


def make_backend(config: str | dict[str, Any] | Backend,
                 defaults: dict[str, Any] | None = None) -> Backend:
    """Build a backend from its name or a config dict whose ``name`` picks the backend, with
    ``defaults`` for the keys it takes that the config leaves out (an env's ``timeout_s``; a
    default of None is no default).

    A live :class:`Backend` is returned as is.

    Raises:
        UnknownNameError: no backend is registered under the name.
        BackendConfigError: an argument the backend needs is missing, or one it has no use for
            is given (:func:`check_backend_config`, before the backend is built).
    """
    if isinstance(config, Backend):
        return config
    name, factory, options = _parsed(config)
    _fit(name, factory, options)
    keys = _keys(name, factory) or ()
    return factory(**{**{key: value for key, value in (defaults or {}).items()
                         if key in keys and value is not None}, **options})


def _known(name: object) -> str:
    """``name`` if a backend is registered under it.

    Raises:
        UnknownNameError: (a ``ValueError``) naming the nearest registered names.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise UnknownNameError("backend", name, sorted(_REGISTRY))
    return name


def parse_backend_arg(value: str) -> dict[str, Any]:
    """Read a command-line backend: a name (``oracle``) or a JSON object with a ``name``,
    checked by :func:`check_backend_config` (so before a command makes any folder).

    Raises:
        BackendConfigError: the JSON is invalid, has no ``name``, or does not fit the backend
            (all are ``ValueError``); an :class:`UnknownNameError` when no backend is
            registered under the name.
        FileNotFoundError: a file the backend reads is not there (``replay``'s ``path``).
    """
    if not value.lstrip().startswith("{"):
        config = {"name": value}
    else:
        try:
            config = json.loads(value)
        except json.JSONDecodeError as exc:
            raise BackendConfigError(f"backend is not valid JSON: {exc}") from None
        if not isinstance(config, dict) or "name" not in config:
            raise BackendConfigError('a backend given as JSON needs a "name" field')
    check_backend_config(config)
    return config
