"""The ``hf`` backend's settings, checked before anything loads: the allowed values
(:data:`CACHES`, :data:`DTYPES`) and :func:`check_settings`, whose one error names every bad
setting, a model or adapter that cannot be reached included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentworld_envs.backends.drafting import DRAFTS

__all__ = ["CACHES", "DTYPES", "check_settings", "unreachable"]

CACHES = ("dynamic", "static")
"""The values of :class:`~agentworld_envs.backends.hf.HFBackend`'s ``cache``."""
DTYPES = ("auto", "float32", "bfloat16", "float16", "float64")
"""The values of :class:`~agentworld_envs.backends.hf.HFBackend`'s ``dtype``."""


def _is_count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def check_settings(model: Any, dtype: Any, batch_size: Any, enable_thinking: Any,
                   adapter: Any, view: Any, greedy_memo: Any, cache: Any, draft: Any,
                   prefix_cache: Any, draft_corpus: Any, **_: Any) -> None:
    """Refuse a bad setting before anything loads; the message names the allowed values.
    Other keys (``device``) are not checked here.

    Raises:
        ValueError: naming every bad setting.
    """
    from agentworld_envs.models.compact_view import VIEWS

    problems = [problem for bad, problem in (
        (not isinstance(model, str) or not model, f"model must be a folder or a hub name, not "
                                                   f"{model!r}"),
        (dtype not in DTYPES, f"dtype must be one of {DTYPES}, not {dtype!r}"),
        (not _is_count(batch_size, 1), f"batch_size must be an integer >= 1, not {batch_size!r}"),
        (not (enable_thinking is None or isinstance(enable_thinking, bool)),
         f"enable_thinking must be True, False or None, not {enable_thinking!r}"),
        (view is not None and view not in VIEWS, f"view must be one of {sorted(VIEWS)} or None, "
                                                 f"not {view!r}"),
        (not _is_count(greedy_memo, 0), f"greedy_memo must be an integer >= 0 (0 keeps none), "
                                        f"not {greedy_memo!r}"),
        (cache not in CACHES, f"cache must be one of {CACHES}, not {cache!r}"),
        (draft not in DRAFTS, f"draft must be one of {DRAFTS}, not {draft!r}"),
        (not _is_count(prefix_cache, 0), f"prefix_cache must be an integer >= 0 (0 keeps none), "
                                         f"not {prefix_cache!r}"),
        (draft_corpus is not None and not (isinstance(draft_corpus, str)
                                           and Path(draft_corpus).expanduser().is_file()),
         f"draft_corpus must be a file of answers (JSON lines) or None, not {draft_corpus!r}"),
    ) if bad]
    problems += [problem for name, value in (("model", model), ("adapter", adapter))
                 if isinstance(value, str) and (problem := unreachable(name, value))]
    if adapter is not None and not isinstance(adapter, str):
        problems.append(f"adapter must be a folder or None, not {adapter!r}")
    if problems:
        raise ValueError("; ".join(problems))


def unreachable(name: str, value: str) -> str | None:
    """Why ``value`` cannot be loaded without a network attempt that must fail, if it cannot:
    a shipped adapter's name, a local-looking path that does not exist, or a hub name while
    the hub is off."""
    from agentworld_envs.models import ADAPTERS
    from agentworld_envs.models.pretrained import BASES

    if value in BASES or Path(value).expanduser().exists():
        return None
    if name == "adapter" and value in ADAPTERS:
        return (f"adapter {value!r} is a shipped adapter's name: use the 'embedded' backend "
                f"with adapter={value!r}, which also sets its view")
    if value.startswith((".", "/", "~")) or value.count("/") > 1:
        return f"{name} {value!r} is no folder"
    if "/" in value and Path(value).parent.is_dir():  # runs/wm with runs/ here: not org/name
        return f"{name} {value!r} is no folder ({Path(value).parent}/ is, so it is no hub name)"
    if any(os.environ.get(flag, "").lower() in ("1", "true", "yes", "on")
           for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return f"{name} {value!r} is no folder, and the hub is off (HF_HUB_OFFLINE)"
    return None
