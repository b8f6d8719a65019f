"""Record and replay completions through an on-disk request cache.

The cache is a JSONL file, one ``{"key", "completion", "v", "model"}`` line per completion,
keyed by a hash of the request and the model. :class:`RecordingBackend` serves hits from it and
records misses from a live backend; :class:`ReplayBackend` serves from it alone, so runs can be
re-scored without any model.

A key (``"v": 3``) hashes the messages' running digest (:meth:`ChatRequest.digest`, which an
episode's :class:`~agentworld_envs.backends.base.MessageLog` extends by one message a step), so
keying a step late in a long episode costs what an early one does, and the model's
:func:`cache_identity`: every setting of the backend's ``describe()`` that changes its answers
(kind, model, the adapter's absolute path, dtype, view, ``enable_thinking``, a server's URLs,
``native_tools``...), written on the line as ``"model"``. Caches written before still replay: a
request missing under its key is looked up under the key of ``"v": 2`` (the same hash of the
model's :func:`legacy_model_name`), then under that of lines without ``"v"`` (the canonical JSON
of the whole request, :func:`legacy_request_key`, at its old, growing cost); what is recorded now
goes under the new key.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.backends.base import Backend, BackendError, first_error_or_completions
from agentworld_envs.backends.cancelling import current_scope
from agentworld_envs.backends.replies import mark_unknown, unknown_usage
from agentworld_envs.protocol.chat import ChatRequest, Completion, Usage
from agentworld_envs.protocol.tool_calls import ToolCall
from agentworld_envs.protocol.warn_outside import warn_outside

__all__ = [
    "RecordingBackend",
    "ReplayBackend",
    "ReplayedWarning",
    "RequestCache",
    "completion_from_dict",
    "completion_to_dict",
    "legacy_model_name",
    "legacy_request_key",
    "cache_identity",
    "request_key",
]

KEY_VERSION = 3
"""The version of the keys written with each cache line (``"v"``)."""

_SPEED_ONLY = frozenset({
    "device", "batch_size", "greedy_memo", "cache", "draft", "prefix_cache", "draft_corpus",
    "api_key_env", "timeout_s", "max_retries", "backoff_s", "max_retry_after_s", "concurrency",
    "replica_cooldown_s", "max_reply_bytes", "refused_fields", "tensor_parallel_size",
    "pipeline_parallel_size", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
    "enable_prefix_caching", "enforce_eager", "swap_space", "disable_log_stats",
})
"""Settings a backend's ``describe()`` may hold that change its speed or its transport, never
its answers (``refused_fields`` grows during a run), left out of :func:`cache_identity`."""


def _sampling(request: ChatRequest) -> dict[str, Any]:
    """The sampling settings that change an answer: a greedy request's seed changes nothing,
    so the same greedy call made from any env, at any seed, is one cache entry."""
    sampling = request.sampling.to_dict()
    if request.sampling.temperature == 0:
        del sampling["seed"]
    return sampling


def _sha256(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # A lone surrogate (valid JSON, "\ud800") is hashed too, not a crash; other text as before.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def cache_identity(described: dict[str, Any]) -> dict[str, Any]:
    """The model in cache keys: a backend's ``describe()`` (or settings from it) less the
    unset and the speed-only settings, in its JSON form; an adapter by its absolute path, a
    server's URLs sorted (vLLM's ``engine_kwargs`` filtered alike)."""
    identity = {k: v for k, v in described.items() if k not in _SPEED_ONLY and v is not None}
    if identity.get("adapter"):
        identity["adapter"] = str(Path(str(identity["adapter"])).expanduser().resolve())
    if isinstance(identity.get("base_urls"), list):
        identity["base_urls"] = sorted(identity["base_urls"])
    if isinstance(identity.get("engine_kwargs"), dict):
        identity["engine_kwargs"] = {k: v for k, v in identity["engine_kwargs"].items()
                                     if k not in _SPEED_ONLY}
    return json.loads(json.dumps(identity, sort_keys=True, default=str))


def legacy_model_name(described: dict[str, Any]) -> str:
    """The model in keys before :data:`KEY_VERSION` 3: the model's name, its adapter's folder
    name and its view (which two models trained alike share)."""
    parts = [str(described.get("model", described.get("name")))]
    if described.get("adapter"):
        parts.append(f"adapter={Path(str(described['adapter'])).name}")
    if described.get("view"):
        parts.append(f"view={described['view']}")
    return " ".join(parts)


def request_key(request: ChatRequest, model: str | dict[str, Any]) -> str:
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
    """Rebuild a :class:`Completion` written by :func:`completion_to_dict`.

    A count its reply left out (:func:`~agentworld_envs.backends.replies.unknown_usage`) is
    None, also on a line written when such counts were recorded as 0.
    """
    completion = Completion(
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
    completion.usage = mark_unknown(completion.usage, unknown_usage(completion))
    return completion


class RequestCache:
    """An append-only JSONL cache of completions, safe to share between processes.

    Each completion is one line written with a single ``write`` to a file opened with
    ``O_APPEND``, then fsynced, so concurrent writers never interleave lines; a line is begun
    with a line break where the file does not end with one (another writer's line cut short by
    its crash), so that it stays whole. Unreadable lines (a write cut short by a crash) are
    skipped with a warning; the last line for a key wins.
    Lines of an older ``"v"`` were keyed as the module says; :meth:`key_for` finds them.

    Args:
        path: The JSONL file; it and its folder are created on the first write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._versions: set[int | None] = set()
        self._models: dict[str, Any] = {}
        """The models of the lines that name theirs, by their canonical JSON."""
        self._fd: int | None = None
        self._lock = threading.Lock()
        if self.path.exists():
            self._load()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the lock and the open file: a copy opens the file again on its first
        write (appends from both stay whole lines)."""
        return {**self.__dict__, "_fd": None, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _load(self) -> None:
        data = self.path.read_bytes()
        for number, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict) or not isinstance(entry["completion"], dict):
                    raise TypeError("not a cache entry")
                self._versions.add(entry.get("v"))
                self._note(entry.get("model"))
                self._entries[entry["key"]] = entry["completion"]
            except (ValueError, KeyError, TypeError):
                warnings.warn(
                    f"{self.path}:{number}: skipping an unreadable cache line "
                    "(a write cut short?)",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def _note(self, model: Any) -> None:
        if model is not None:
            self._models.setdefault(json.dumps(model, sort_keys=True), model)

    def key_for(self, request: ChatRequest, model: str | dict[str, Any],
                old_model: str | None = None) -> str:
        """The key ``request`` is (or will be) recorded under: its :func:`request_key` for
        ``model``, or, where only an older line holds it, its key of ``"v": 2`` or its
        :func:`legacy_request_key`, both for ``old_model`` (by default ``model``)."""
        key = request_key(request, model)
        if key in self._entries or self._versions <= {KEY_VERSION}:
            return key
        old_model = model if old_model is None else old_model
        if 2 in self._versions and (old := request_key(request, old_model)) in self._entries:
            return old
        if None in self._versions and (
                old := legacy_request_key(request, old_model)) in self._entries:
            return old
        return key

    def recorded_model(self, model: str | dict[str, Any]) -> str | dict[str, Any]:
        """The model of the lines recorded here that ``model`` names (itself; a string: its
        :func:`legacy_model_name`; a dict: settings as :func:`cache_identity` reads them),
        else ``model``.

        Raises:
            ValueError: when ``model`` names several, whose answers differ.
        """
        named = [m for m in self._models.values() if _names(model, m)]
        if len(named) > 1:
            raise ValueError(
                f"{self.path} holds the answers of {len(named)} models that {model!r} names: "
                f"{named}; pass model as a dict of the settings that tell them apart")
        return named[0] if named else model

    def models(self) -> list[Any]:
        """The models the lines recorded here name (lines of an older ``"v"`` may name none)."""
        return list(self._models.values())

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        """The keys recorded so far."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Completion | None:
        """The completion recorded under ``key``, or None: a copy, so that a caller's edits
        (to its ``raw`` or a call's arguments) never reach a later hit."""
        entry = self._entries.get(key)
        return None if entry is None else completion_from_dict(copy.deepcopy(entry))

    def put(self, key: str, completion: Completion, model: Any = None) -> None:
        """Record a completion, with the model it was keyed with: one appended, fsynced
        line.

        Raises:
            OSError: when the disk took only part of the line (full), which is then not kept.
        """
        entry = completion_to_dict(completion)
        record = {"key": key, "completion": entry, "v": KEY_VERSION,
                  **({"model": model} if model is not None else {})}
        try:
            data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: written escaped, so it replays as it was
            data = (json.dumps(record) + "\n").encode("ascii")
        with self._lock:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            end = os.fstat(self._fd).st_size
            if end and os.pread(self._fd, 1, end - 1) != b"\n":  # end a line cut short
                data = b"\n" + data
            if os.write(self._fd, data) < len(data):  # the disk filled: the line is cut short
                raise OSError(errno.ENOSPC, "a record was cut short (disk full?); it is not kept",
                              str(self.path))
            os.fsync(self._fd)
            self._entries[key] = json.loads(data)["completion"]  # the line's, not the caller's
            self._versions.add(KEY_VERSION)
            self._note(model)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _names(model: str | dict[str, Any], recorded: Any) -> bool:
    """Whether ``model`` (as :meth:`RequestCache.recorded_model` reads it) names ``recorded``."""
    if model == recorded:
        return True
    if not isinstance(recorded, dict):
        return False
    if isinstance(model, str):
        return model == legacy_model_name(recorded)
    return all(recorded.get(k) == v for k, v in cache_identity(model).items())


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
        path: The cache file; it and its folder are created if missing.
        model: The model in cache keys; by default the inner backend's
            :func:`cache_identity` (and, to find lines of an older ``"v"``, its
            :func:`legacy_model_name`).
    """

    name = "recording"

    def __init__(self, inner: Backend | dict[str, Any], path: str | Path, model: str | None = None):
        from agentworld_envs.backends.registry import make_backend

        self.inner = make_backend(inner)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).touch()  # a recording that asks nothing still replays (answering nothing)
        self.cache = RequestCache(path)
        described = self.inner.describe()
        self.model: str | dict[str, Any] = cache_identity(described) if model is None else model
        self._old_model = legacy_model_name(described) if model is None else model
        self._replays = len(self.cache) > 0
        """Whether a hit may still be an earlier run's answer not yet reported."""
        self._earlier = frozenset(self.cache.keys()) if self._replays else frozenset()
        self._cancels = 0
        """How many times :meth:`cancel` was called: a call begun before the last records
        nothing (its caller was told it failed)."""

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        """A miss goes to the inner backend, so this one blocks where that one does."""
        return self.inner.blocking

    @property
    def cancels_each_call(self) -> bool:  # type: ignore[override]
        """A miss goes to the inner backend in the caller's thread, so a call's scope reaches
        it, and a call whose scope was cancelled records nothing."""
        return self.inner.cancels_each_call

    def describe(self) -> dict[str, Any]:
        """The inner backend's description, plus the cache path."""
        return {"name": self.name, "path": str(self.cache.path), "inner": self.inner.describe()}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Serve hits from the cache; send the misses to the inner backend as one batch."""
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """As :meth:`complete`, each failed miss reported in its place (and not recorded)."""
        keys = [self.cache.key_for(r, self.model, self._old_model) for r in requests]
        misses = {k: r for k, r in zip(keys, requests, strict=True) if k not in self.cache}
        if self._replays:
            self._say_replayed(sum(k in self._earlier for k in keys), len(keys))
        unrecorded: dict[str, Completion | BackendError] = {}
        if misses:
            cancels, scope = self._cancels, current_scope()
            fresh = self.inner.complete_each(list(misses.values()))
            abandoned = cancels != self._cancels or (scope is not None and scope.cancelled)
            for key, outcome in zip(misses, fresh, strict=True):
                if isinstance(outcome, BackendError) or abandoned:
                    unrecorded[key] = outcome
                else:
                    self.cache.put(key, outcome, self.model)
        return [unrecorded[k] if k in unrecorded else self.cache.get(k)  # type: ignore[misc]
                for k in keys]

    def cancel(self) -> None:
        """Cancel the inner backend's calls; those in flight record nothing, so that an answer
        that comes after its caller gave up (a timed-out call) is never replayed."""
        self._cancels += 1
        self.inner.cancel()

    def _say_replayed(self, replayed: int, asked: int) -> None:
        if replayed:
            self._replays = False
            warn_outside(  # said once per backend, its counts new for each
                f"{self.cache.path} already holds {len(self._earlier)} recorded answer(s): "
                f"{replayed} of these {asked} request(s) were answered from it, not by "
                f"{self._old_model!r}, and later ones will be too without another warning (pass a "
                "new record_path, or delete the file, to ask the model afresh)",
                ReplayedWarning)

    def close(self) -> None:
        """Close the inner backend and the cache."""
        self.inner.close()
        self.cache.close()


class ReplayBackend(Backend):
    """Serve completions from a recorded cache only; a miss is an error in its request's place.

    Args:
        path: The cache file written by :class:`RecordingBackend`.
        model: The recorded model: its :func:`legacy_model_name` (its ``model``, adapter
            folder and view, e.g. ``"smollm2 adapter=tools view=compact"``: what lines of an
            older ``"v"`` were keyed with), or, where the file holds several models of that
            name, a dict of the settings that tell them apart (``{"model": ...,
            "adapter": ...}``).

    Raises:
        FileNotFoundError: when there is no file at ``path``.
        ValueError: when ``model`` names several of the file's models.
    """

    name = "replay"
    blocking = False

    def __init__(self, path: str | Path, model: str | dict[str, Any] = "") -> None:
        self.check_config(path, model)
        self.cache = RequestCache(path)
        self.model = model
        self._key_model = self.cache.recorded_model(model)
        self._old_model = model if isinstance(model, str) else legacy_model_name(model)
        self._hint = _other_models(model, self.cache.models())

    @staticmethod
    def check_config(path: str | Path, model: str | dict[str, Any] = "") -> None:
        """Raise :class:`FileNotFoundError` when there is no file at ``path``; a command checks
        a ``replay`` config with it (:func:`~agentworld_envs.backends.check_backend_config`)
        before it makes anything. A folder, or a path that is no text, is refused as a
        ``ValueError``."""
        if not isinstance(path, str | os.PathLike):
            raise ValueError(f"path must name a file of recorded completions, got {path!r}")
        if Path(path).is_dir():
            raise ValueError(f"path {str(path)!r} is a folder, not a file of recorded completions")
        if not Path(path).is_file():
            raise FileNotFoundError(errno.ENOENT, "no recorded completions to replay", str(path))

    def describe(self) -> dict[str, Any]:
        """The cache path and model name."""
        return {"name": self.name, "path": str(self.cache.path), "model": self.model}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """The recorded completion of every request.

        Raises:
            BackendError: when a request was never recorded.
        """
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """As :meth:`complete`, each request never recorded answered by its error."""
        return [self._recorded(request) for request in requests]

    def _recorded(self, request: ChatRequest) -> Completion | BackendError:
        key = self.cache.key_for(request, self._key_model, self._old_model)
        completion = self.cache.get(key)
        if completion is None:
            return BackendError(
                f"no recorded completion in {self.cache.path} for request {key} "
                f"(model {self.model!r}){self._hint}; last user message: "
                f"{_last_user(request)!r}")
        return completion

    def close(self) -> None:
        """Close the cache."""
        self.cache.close()


def _other_models(model: str | dict[str, Any], recorded: list[Any]) -> str:
    """Where ``model`` names none of the ``recorded`` models (and some are), the ones it could
    name instead, for a replay miss's message; else ``""``."""
    if not recorded or any(_names(model, m) for m in recorded):
        return ""
    names = sorted({m if isinstance(m, str) else legacy_model_name(m) for m in recorded})
    which = f'pass "model": {json.dumps(names[0])}' if len(names) == 1 else \
        'pass one of them as "model"'
    return f"; the file holds recordings for model(s) {', '.join(map(repr, names))}: {which}"


def _last_user(request: ChatRequest, limit: int = 200) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            return text if len(text) <= limit else text[: limit - 3] + "..."
    return ""
