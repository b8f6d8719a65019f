"""Record and replay completions through an on-disk request cache.

The cache is a JSONL file, one ``{"key", "completion", "v"}`` line per completion, keyed by a
hash of the request and the model. :class:`RecordingBackend` serves hits from it and records
misses from a live backend; :class:`ReplayBackend` serves from it alone, so runs can be
re-scored without any model.

A key (``"v": 2``) hashes the messages' running digest (:meth:`ChatRequest.digest`, which an
episode's :class:`~agentworld_envs.backends.base.MessageLog` extends by one message a step), so
keying a step late in a long episode costs what an early one does. Caches written before (lines
without ``"v"``, keyed by the canonical JSON of the whole request, :func:`legacy_request_key`)
still replay: a request missing under its key is looked up under its old one, at the old,
growing cost; what is recorded now goes under the new key.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.backends.base import Backend, BackendError, first_error_or_completions
from agentworld_envs.protocol.chat import ChatRequest, Completion, Usage
from agentworld_envs.protocol.tool_calls import ToolCall

__all__ = [
    "RecordingBackend",
    "ReplayBackend",
    "ReplayedWarning",
    "RequestCache",
    "completion_from_dict",
    "completion_to_dict",
    "legacy_request_key",
    "request_key",
]

KEY_VERSION = 2
"""The version of :func:`request_key` written with each cache line (``"v"``)."""


def _sampling(request: ChatRequest) -> dict[str, Any]:
    """The sampling settings that change an answer: a greedy request's seed changes nothing,
    so the same greedy call made from any env, at any seed, is one cache entry."""
    sampling = request.sampling.to_dict()
    if request.sampling.temperature == 0:
        del sampling["seed"]
    return sampling


def _sha256(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_key(request: ChatRequest, model: str) -> str:
    """SHA-256 of the model, the messages' digest (:meth:`ChatRequest.digest`), the tools and
    the sampling settings (a greedy request's seed left out).

    The messages' digest is the one the request's :class:`~agentworld_envs.backends.base.
    MessageLog` kept running, so this costs the same at any turn of an episode.
    """
    return _sha256({"model": model, "messages_digest": request.digest(),
                    "tools": request.tools, "sampling": _sampling(request)})


def legacy_request_key(request: ChatRequest, model: str) -> str:
    """The key of caches written before :data:`KEY_VERSION` 2: SHA-256 of the canonical JSON
    of the whole request (messages, tools, sampling) and the model."""
    return _sha256({"model": model, "messages": request.messages, "tools": request.tools,
                    "sampling": _sampling(request)})


def completion_to_dict(completion: Completion) -> dict[str, Any]:
    """A JSON-ready form that :func:`completion_from_dict` restores exactly."""
    return {
        "text": completion.text,
        "tool_calls": [
            {"name": c.name, "arguments": c.arguments, "call_id": c.call_id}
            for c in completion.tool_calls
        ],
        "finish_reason": completion.finish_reason,
        "usage": {
            "input_tokens": completion.usage.input_tokens,
            "output_tokens": completion.usage.output_tokens,
        },
        "latency_s": completion.latency_s,
        "raw": completion.raw,
    }


def completion_from_dict(data: dict[str, Any]) -> Completion:
    """Rebuild a :class:`Completion` written by :func:`completion_to_dict`."""
    return Completion(
        text=data["text"],
        tool_calls=[
            ToolCall(name=c["name"], arguments=c["arguments"], call_id=c.get("call_id"))
            for c in data.get("tool_calls", [])
        ],
        finish_reason=data.get("finish_reason", "stop"),
        usage=Usage(**data.get("usage", {})),
        latency_s=data.get("latency_s", 0.0),
        raw=data.get("raw"),
    )


class RequestCache:
    """An append-only JSONL cache of completions, safe to share between processes.

    Each completion is one line written with a single ``write`` to a file opened with
    ``O_APPEND``, then fsynced, so concurrent writers never interleave lines. Unreadable lines
    (a write cut short by a crash) are skipped with a warning; the last line for a key wins.
    Lines without ``"v"`` were keyed by :func:`legacy_request_key`; :meth:`key_for` finds them.

    Args:
        path: The JSONL file; it and its folder are created on the first write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._legacy = False
        self._fd: int | None = None
        self._needs_newline = False
        self._lock = threading.Lock()
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        self._needs_newline = bool(data) and not data.endswith(b"\n")
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._entries[entry["key"]] = entry["completion"]
                self._legacy = self._legacy or entry.get("v") != KEY_VERSION
            except (ValueError, KeyError, TypeError):
                warnings.warn(
                    f"{self.path}:{number}: skipping an unreadable cache line "
                    "(a write cut short?)",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def key_for(self, request: ChatRequest, model: str) -> str:
        """The key ``request`` is (or will be) recorded under: its :func:`request_key`, or
        its :func:`legacy_request_key` where only an old line holds it."""
        key = request_key(request, model)
        if key in self._entries or not self._legacy:
            return key
        old = legacy_request_key(request, model)
        return old if old in self._entries else key

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        """The keys recorded so far."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Completion | None:
        """The completion recorded under ``key``, or None."""
        entry = self._entries.get(key)
        return None if entry is None else completion_from_dict(entry)

    def put(self, key: str, completion: Completion) -> None:
        """Record a completion: one appended, fsynced line."""
        entry = completion_to_dict(completion)
        line = json.dumps({"key": key, "completion": entry, "v": KEY_VERSION},
                          ensure_ascii=False) + "\n"
        with self._lock:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if self._needs_newline:  # end the cut-short line so this one stays readable
                line = "\n" + line
                self._needs_newline = False
            os.write(self._fd, line.encode("utf-8"))
            os.fsync(self._fd)
            self._entries[key] = entry

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _model_name(backend: Backend) -> str:
    """The model's name in cache keys, with the adapter and the view that change its answers."""
    described = backend.describe()
    parts = [str(described.get("model", backend.name))]
    if described.get("adapter"):
        parts.append(f"adapter={Path(str(described['adapter'])).name}")
    if described.get("view"):
        parts.append(f"view={described['view']}")
    return " ".join(parts)


class ReplayedWarning(UserWarning):
    """A recording backend served answers recorded before it opened its file, not the model's."""


class RecordingBackend(Backend):
    """Serve cached completions and record the misses from a live backend.

    Identical requests share one completion, so a recording replays exactly; give sampled
    requests distinct seeds to keep their samples apart. The first time it serves an answer
    recorded before it opened the file (a rerun with the same path), it says so once, as a
    :class:`ReplayedWarning`.

    Args:
        inner: The live backend, or its config for ``make_backend``.
        path: The cache file.
        model: Model name used in cache keys; defaults to the inner backend's ``model``.
    """

    name = "recording"

    def __init__(self, inner: Backend | dict[str, Any], path: str | Path, model: str | None = None):
        from agentworld_envs.backends.registry import make_backend

        self.inner = make_backend(inner)
        self.cache = RequestCache(path)
        self.model = _model_name(self.inner) if model is None else model
        self._replays = len(self.cache) > 0
        """Whether a hit may still be an earlier run's answer not yet reported."""
        self._earlier = frozenset(self.cache.keys()) if self._replays else frozenset()

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        """A miss goes to the inner backend, so this one blocks where that one does."""
        return self.inner.blocking

    def describe(self) -> dict[str, Any]:
        """The inner backend's description, plus the cache path."""
        return {"name": self.name, "path": str(self.cache.path), "inner": self.inner.describe()}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Serve hits from the cache; send the misses to the inner backend as one batch."""
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """As :meth:`complete`, each failed miss reported in its place (and not recorded)."""
        keys = [self.cache.key_for(r, self.model) for r in requests]
        misses = {k: r for k, r in zip(keys, requests, strict=True) if k not in self.cache}
        if self._replays:
            self._say_replayed(sum(k in self._earlier for k in keys), len(keys))
        failed: dict[str, BackendError] = {}
        if misses:
            fresh = self.inner.complete_each(list(misses.values()))
            for key, outcome in zip(misses, fresh, strict=True):
                if isinstance(outcome, BackendError):
                    failed[key] = outcome
                else:
                    self.cache.put(key, outcome)
        return [failed[k] if k in failed else self.cache.get(k) for k in keys]  # type: ignore[misc]

    def _say_replayed(self, replayed: int, asked: int) -> None:
        if replayed:
            self._replays = False
            warnings.warn(
                f"{self.cache.path} already holds {len(self._earlier)} recorded answer(s): "
                f"{replayed} of these {asked} request(s) were answered from it, not by "
                f"{self.model!r}, and later ones will be too without another warning (pass a "
                "new record_path, or delete the file, to ask the model afresh)",
                ReplayedWarning, stacklevel=3)

    def close(self) -> None:
        """Close the inner backend and the cache."""
        self.inner.close()
        self.cache.close()


class ReplayBackend(Backend):
    """Serve completions from a recorded cache only; a miss is an error.

    Args:
        path: The cache file written by :class:`RecordingBackend`.
        model: The model name the recording was keyed with.
    """

    name = "replay"
    blocking = False

    def __init__(self, path: str | Path, model: str = "") -> None:
        self.cache = RequestCache(path)
        self.model = model

    def describe(self) -> dict[str, Any]:
        """The cache path and model name."""
        return {"name": self.name, "path": str(self.cache.path), "model": self.model}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """The recorded completion of every request.

        Raises:
            BackendError: when a request was never recorded.
        """
        completions = []
        for request in requests:
            key = self.cache.key_for(request, self.model)
            completion = self.cache.get(key)
            if completion is None:
                raise BackendError(
                    f"no recorded completion in {self.cache.path} for request {key} "
                    f"(model {self.model!r}); last user message: {_last_user(request)!r}"
                )
            completions.append(completion)
        return completions

    def close(self) -> None:
        """Close the cache."""
        self.cache.close()


def _last_user(request: ChatRequest, limit: int = 200) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""
