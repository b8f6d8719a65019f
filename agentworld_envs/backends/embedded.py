"""The embedded world model as a backend: the pretrained base run in process, with a shipped
adapter merged on load (:mod:`agentworld_envs.models` holds the artefacts).

``tools`` is the default world model of ``floor`` and ``mcp`` (:data:`DOMAIN_ADAPTERS`). An
adapter brings its compact view. Without an adapter the base reads the domain's built-in prompt
whole (``backend="embedded"``, never a default: untrained, it loops on most domains' prompts, so
the domains without an adapter must name their world model). Loading needs the ``hf`` extra.

Example:
    >>> embedded_backend("tools")["view"], embedded_backend()["view"]
    ('compact', None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld_envs.models import DRAFT_CORPUS, adapter_dir

if TYPE_CHECKING:
    from agentworld_envs.backends.hf import HFBackend

__all__ = ["DEFAULT_WORLD_MODEL", "DOMAIN_ADAPTERS", "EMBEDDED_PREFIX_CACHE",
           "EMBEDDED_SAMPLING", "NoDefaultWorldModelError", "check_embedded_config",
           "default_world_model", "embedded_backend", "embedded_world_model"]

DOMAIN_ADAPTERS = {"floor": "tools", "mcp": "tools"}
"""The adapter each domain defaults to; the other domains have no default world model."""

EMBEDDED_SAMPLING = {"temperature": 0.0, "max_tokens": 768}
"""Sampling of the embedded models: greedy, with room for the longest floor observation (six
record lookups in one action); answers end with an end-of-turn token well before. Declared
with the ``embedded`` backend's registration, so an env asking it gets these defaults."""
EMBEDDED_PREFIX_CACHE = 16_384
"""Prompt tokens whose keys and values the embedded model keeps (the ``hf`` backend's
``prefix_cache``): about 0.75 GB in float32, a vector of 16 envs' prompts, so each env's next
step prefills only what its prompt adds."""
DEFAULT_WORLD_MODEL = "embedded"
"""The backend an env gets when it names none (:func:`default_world_model`)."""


class NoDefaultWorldModelError(ValueError):
    """A domain without a fine-tuned adapter was made without naming a world model."""


def default_world_model(domain: str) -> dict[str, Any]:
    """The world model of ``domain`` when none is named: the embedded base with the domain's
    fine-tuned adapter (floor, mcp). The other domains have none: the untrained base loops on
    their prompts, so they must name a backend (:class:`NoDefaultWorldModelError` says how)."""
    if domain not in DOMAIN_ADAPTERS:
        raise NoDefaultWorldModelError(
            f"domain {domain!r} has no default world model (only "
            f"{', '.join(sorted(DOMAIN_ADAPTERS))} ship a fine-tuned one); name one: "
            'backend={"name": "openai", "base_url": "http://127.0.0.1:8000/v1", '
            '"model": "<served model>"} for an OpenAI-compatible server (README, Set-up), '
            'or backend="scripted" for the offline placeholder (gym.make\'s backend; on the '
            'command line the same value as --backend \'{"name": "openai", ...}\' or '
            '--backend scripted)')
    return {"name": DEFAULT_WORLD_MODEL, "adapter": DOMAIN_ADAPTERS[domain]}


def embedded_backend(adapter: str | None = None, **overrides: Any) -> dict[str, Any]:
    """Plain-data ``hf`` config of the embedded model: the base, with the shipped ``adapter``
    (and its compact view and draft corpus) when one is named; CPU, batches of 16, the last
    4,096 greedy answers kept for states an env comes back to, and the keys and values of the
    last 16,384 prompt tokens (:data:`EMBEDDED_PREFIX_CACHE`) for prompts that extend them.

    The base's folder is resolved (converted on first use) when the backend is built.
    Keyword arguments override the config's fields, e.g. ``device="cuda:0"``.
    """
    return {"name": "hf", "model": "smollm2",
            "adapter": str(adapter_dir(adapter)) if adapter else None,
            "view": "compact" if adapter else None,
            "draft_corpus": str(adapter_dir(adapter) / DRAFT_CORPUS) if adapter else None,
            "device": "cpu", "batch_size": 16,
            "greedy_memo": 4096, "prefix_cache": EMBEDDED_PREFIX_CACHE, **overrides}


def embedded_world_model(adapter: str | None = None, **overrides: Any) -> HFBackend:
    """The embedded model as a live backend (registered as ``"embedded"``), e.g.
    ``backend={"name": "embedded", "adapter": "tools"}``."""
    from agentworld_envs.backends.hf import HFBackend

    config = embedded_backend(adapter, **overrides)
    config.pop("name")
    return HFBackend(**config)


def check_embedded_config(adapter: Any = None, **overrides: Any) -> None:
    """Refuse a bad ``embedded`` config before anything loads, as ``hf``'s ``check_config``
    does (a command checks it so, before it makes anything): an adapter that is not shipped,
    then every bad setting of the ``hf`` config it makes.

    Raises:
        ValueError: naming the bad adapter, or every bad setting.
    """
    from agentworld_envs.backends.hf import HFBackend
    from agentworld_envs.backends.registry import factory_defaults

    config = embedded_backend(adapter, **overrides)
    config.pop("name")
    HFBackend.check_config(**{**factory_defaults(HFBackend), **config})


embedded_world_model.forwards_to = ("agentworld_envs.backends.hf:HFBackend",)  # type: ignore[attr-defined]
embedded_world_model.check_config = check_embedded_config  # type: ignore[attr-defined]
