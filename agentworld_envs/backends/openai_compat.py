"""Backend for any OpenAI-compatible chat server (vLLM, SGLang, ``transformers serve``), over httpx.

Requests of a batch run concurrently on an asyncio loop, at most ``concurrency`` in flight
across all the threads calling the backend; each attempt is bounded as a whole (connect, send,
wait and a slow trickle of bytes together) by ``timeout_s`` and by what is left of the call's
time, ``timeout_s * (max_retries + 1)``, which no attempt outlasts. Failed requests are retried
after a jittered exponential backoff (a minute at most), or after the server's ``Retry-After``,
while the wait ends within the call's time; a reply is read up to ``max_reply_bytes`` and a
longer one is a fault. Several server replicas share the load, and a failing replica sits out a
cool-down. Replies become completions in :mod:`agentworld_envs.backends.replies`, with
credentials masked.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import email.utils
import functools
import json
import math
import os
import random
import ssl
import threading
import time
import urllib.parse
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx

from agentworld_envs.backends.base import Backend, BackendError, first_error_or_completions
from agentworld_envs.backends.cancelling import CallScope, current_scope, stopped_with
from agentworld_envs.backends.redaction import redact, url_secrets
from agentworld_envs.backends.replies import (
    USAGE_UNKNOWN_KEY,
    completion_from_reply,
    refused_fields,
    unknown_usage,
)
from agentworld_envs.protocol.chat import ChatRequest, Completion, SamplingParams
from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.protocol.tool_calls import parse_action

__all__ = [
    "CPU_SERVER_TIMEOUT_HINT",
    "OpenAIBackend",
    "OpenAIRequestError",
    "probe_tool_support",
    "retry_after_s",
]

_SNIPPET = 300
CPU_SERVER_TIMEOUT_HINT = '"timeout_s": 900 serves a model that transformers serve runs on a CPU'
"""What a timed-out request says to set (docs/agentworld_envs.md, "Backends, and the default")."""
_REPLY_READ = 4096
"""Most characters of an error reply searched for the fields it refuses."""
_NOT_REFUSABLE = frozenset({"model", "messages"})
"""Request fields never read as refused: without them there is no request to make."""
_STANDARD = frozenset({"model", "messages", "tools", "temperature", "top_p", "max_tokens", "seed",
                       "stop"})
"""The OpenAI API's fields this backend sends: a refused one is an error, never dropped (the
request would ask for something else). Only extensions, ``top_k`` and a sampling's ``extra``
fields, are dropped."""
_RETRIED = frozenset({408, 425, 429, 500, 502, 503, 504})
"""Statuses that say the same request may succeed later: a timeout, too early, a rate limit, a
failing or overloaded server or gateway (501, 505 and the rest fail the same way again)."""
_MAX_BACKOFF_S = 60.0
"""Longest backoff between attempts, however many retries."""
_TIMEOUT_DECIMALS = 3
"""Decimals of an attempt's time shown in a timeout message."""
_REFUSALS = threading.Lock()
"""Guards what backends learn (refused fields, a server that sends no usage) and their batches
in flight (batches may run in several threads)."""
_T = TypeVar("_T")


class OpenAIRequestError(BackendError):
    """A chat request failed; ``status`` is the last HTTP status, or None for transport errors;
    ``reply`` the start of the server's error reply (credentials masked), if it sent one."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None,
                 attempts: int = 0, reply: str = "") -> None:
        super().__init__(message)
        self.url, self.status, self.attempts, self.reply = url, status, attempts, reply


def _tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """OpenAI tool format; a bare function schema ``{"name", "parameters"}`` is wrapped."""
    if "type" not in tool and "name" in tool:
        return {"type": "function", "function": tool}
    return tool


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay seconds or an HTTP date), or None.

    Example:
        >>> retry_after_s("2.5"), retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT"), retry_after_s("x")
        (2.5, 0.0, None)
    """
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        seconds = (when - dt.datetime.now(dt.timezone.utc)).total_seconds()
    return None if math.isnan(seconds) else max(0.0, seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying SSL context per process (loading the CA bundle is the slow part)."""
    return httpx.create_ssl_context()


def _run(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from sync code, even under a running loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=1) as pool:  # joined on exit: no thread outlives it
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


class _Slots:
    """At most ``limit`` holders at once across every thread and event loop (each batch runs
    on its own loop, so an ``asyncio.Semaphore`` would bound one batch only). Thread-safe."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._free = limit
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"_limit": self._limit}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_limit"])  # type: ignore[misc]

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold a slot for the body; a cancelled wait takes none (or passes on one it was
        handed)."""
        with self._lock:
            waiter = None
            if self._free:
                self._free -= 1
            else:
                waiter = asyncio.get_running_loop().create_future()
                self._waiting.append(waiter)
        if waiter is not None:
            try:
                await waiter
            except asyncio.CancelledError:
                with self._lock:
                    handed = waiter not in self._waiting
                    if not handed:
                        self._waiting.remove(waiter)
                if handed:
                    self._release()
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._free += 1
                    return
                waiter = self._waiting.popleft()
            try:
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)
                return
            except RuntimeError:  # its loop has closed: the slot goes to the next waiter
                continue


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # a cancelled waiter passes its slot on (see _Slots.held)
        waiter.set_result(None)


def _plain_url(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """``url`` without its userinfo, and that userinfo as HTTP Basic auth (so that no request
    URL, which httpx logs, carries a credential)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:  # reported by the request, as a connection error
        return url, None
    if not parsed.userinfo:
        return url, None
    plain = str(parsed.copy_with(userinfo=b"")).rstrip("/")
    return plain, httpx.BasicAuth(parsed.username, parsed.password)


class _Replicas:
    """Round-robin over server replicas; a failed replica sits out ``cooldown_s``. Thread-safe."""

    def __init__(self, urls: list[str], cooldown_s: float) -> None:
        self.urls = urls
        self.plain = [_plain_url(url) for url in urls]
        """Each replica's URL without credentials, and its credentials as Basic auth."""
        self._cooldown_s = cooldown_s
        self._down_until = [0.0] * len(urls)
        self._failed_at = [float("-inf")] * len(urls)
        self._next = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def pick(self) -> int:
        """The next healthy replica; when none is, the one that failed longest ago."""
        with self._lock:
            now = time.monotonic()
            for step in range(len(self.urls)):
                index = (self._next + step) % len(self.urls)
                if self._down_until[index] <= now:
                    self._next = index + 1
                    return index
            return min(range(len(self.urls)), key=self._failed_at.__getitem__)

    def any_healthy(self) -> bool:
        """Whether some replica is in rotation."""
        with self._lock:
            now = time.monotonic()
            return any(until <= now for until in self._down_until)

    def failed(self, index: int) -> None:
        """Take a replica out of rotation for the cool-down."""
        with self._lock:
            now = time.monotonic()
            self._failed_at[index] = now
            self._down_until[index] = now + self._cooldown_s

    def answered(self, index: int) -> None:
        """Put a replica that answered back in rotation."""
        with self._lock:
            self._down_until[index] = 0.0


class OpenAIBackend(Backend):
    """Chat completions from OpenAI-compatible servers.

    Args:
        model: Model name sent in each request.
        base_url: Server base URL including ``/v1``, or a list of replica URLs. Credentials in a
            URL (``http://user:pass@host/v1``) are sent as HTTP Basic auth and never shown.
        api_key_env: Environment variable holding the API key, read at request time; None or an
            unset variable sends no key. A key no header can carry (with a line break read from
            a file) fails its requests at once, not retried.
        timeout_s: Limit on each attempt as a whole: connecting, sending and receiving the
            entire reply, however slowly it trickles in. A model served on a CPU (``transformers
            serve --device cpu``) needs minutes for a long answer: give it 900 or more.
        max_retries: Retries after the first attempt, on HTTP 408, 425, 429, 500, 502, 503 and
            504, connection errors, undecodable replies, a success without a JSON object (a
            reply cut short) and timeouts. A wait that would end later than ``timeout_s *
            (max_retries + 1)`` after the call began (the time a simulated env gives the
            call) is not waited: the call fails at once with the fault that asked for it. No
            attempt, on any replica, outlasts that time either.
        backoff_s: First backoff; it doubles on each retry, up to 60 s. Each wait is drawn
            between half the backoff and the whole of it ("equal jitter"), so that the clients
            of one overloaded server do not all come back at once.
        max_retry_after_s: Longest wait honoured from a server's ``Retry-After`` header (which
            replaces the backoff when given). The wait is the server's, plus up to half the
            backoff drawn at random, never past this limit nor the call's time.
        jitter_seed: Seed of the draws that jitter the waits, for waits that repeat from run to
            run (they change timing only, never an answer); None draws them from the operating
            system, so that copies of the backend (Ray actors, env workers) never wait in step.
        concurrency: Most requests in flight at once, however many threads call the backend.
        native_tools: Send tool schemas as the API's ``tools``; when False the caller is expected
            to describe tools in the prompt, and calls are read from the text.
        replica_cooldown_s: How long a failing replica stays out of rotation.
        max_reply_bytes: Most bytes read of one reply (after any content decoding); a longer
            reply is a fault that is not retried, and is never buffered whole.

    A request refused (HTTP 400 or 422) for extension fields the server does not support
    (``top_k`` and a sampling's ``extra`` fields), as ``transformers serve`` refuses ``top_k``
    ("Unexpected fields in the request: {'top_k'}"), is sent once more without the fields the
    refusal names, with one ``RuntimeWarning`` naming them; the backend remembers them
    (``describe()["refused_fields"]``) and never sends them again. A refusal naming a field of
    the OpenAI API (``max_tokens``, ``temperature``, ``seed``...) is an error, not retried, that
    names it; one that names no field of the request is reported as any other.
    """

    name = "openai"
    cancels_each_call = True  # a call's scope cancels its batch's task alone (_batch)

    def __init__(
        self,
        model: str,
        base_url: str | list[str],
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_retry_after_s: float = 60.0,
        concurrency: int = 8,
        native_tools: bool = True,
        replica_cooldown_s: float = 30.0,
        max_reply_bytes: int = 64 << 20,
        jitter_seed: int | None = None,
    ) -> None:
        self.check_config(model, base_url, timeout_s, max_retries, max_retry_after_s,
                          concurrency, max_reply_bytes, backoff_s=backoff_s,
                          replica_cooldown_s=replica_cooldown_s, jitter_seed=jitter_seed,
                          api_key_env=api_key_env, native_tools=native_tools)
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.concurrency = concurrency
        self.native_tools = native_tools
        self.replica_cooldown_s = replica_cooldown_s
        self.max_reply_bytes = max_reply_bytes
        self.jitter_seed = jitter_seed
        self._jitter = _jitter_draws(jitter_seed)
        self._usage_warned = False
        self._replicas = _Replicas([u.rstrip("/") for u in urls], replica_cooldown_s)
        self._url_secrets = [s for u in urls for s in url_secrets(u)]
        self._refused: frozenset[str] = frozenset()
        self._slots = _Slots(concurrency)
        self._running: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = set()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the batches in flight (a copy has none) or the jitter's draws (a copy
        draws its own: from the seed again, or from the operating system)."""
        return {**self.__dict__, "_running": set(), "_jitter": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _jitter=_jitter_draws(state["jitter_seed"]))

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata: URLs without credentials, the key's variable name only."""
        return redact({
            "name": self.name,
            "model": self.model,
            "base_urls": list(self._replicas.urls),
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "max_retry_after_s": self.max_retry_after_s,
            "concurrency": self.concurrency,
            "native_tools": self.native_tools,
            "replica_cooldown_s": self.replica_cooldown_s,
            "max_reply_bytes": self.max_reply_bytes,
            "jitter_seed": self.jitter_seed,
            **({"refused_fields": sorted(self._refused)} if self._refused else {}),
        })

    def cancel(self) -> None:
        """Cancel every batch in flight, from any thread: their connections are closed, so the
        server can stop working on them, and each ``complete`` call raises
        ``asyncio.CancelledError``. A cancelled
        :class:`~agentworld_envs.backends.cancelling.CallScope` cancels its call's batch so,
        and no other."""
        with _REFUSALS:
            running = list(self._running)
        for loop, task in running:
            loop.call_soon_threadsafe(task.cancel)

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete every request concurrently; results come back in input order.

        Raises:
            BackendError: when any request fails after its retries.
        """
        return first_error_or_completions(self.complete_each(requests))

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """Complete every request concurrently; a failed request's error stands in its place."""
        if not requests:
            return []
        payloads = [self._payload(request, self.model) for request in requests]
        scope = current_scope()  # read here: _run may run the batch in another thread
        return _run(lambda: self._batch(payloads, scope))

    @staticmethod
    def check_config(model: Any, base_url: Any, timeout_s: Any, max_retries: Any,
                     max_retry_after_s: Any, concurrency: Any, max_reply_bytes: Any,
                     backoff_s: Any = 1.0, replica_cooldown_s: Any = 30.0, jitter_seed: Any = None,
                     api_key_env: Any = None, native_tools: Any = True, **_: Any) -> None:
        """Raise ``ValueError`` for a setting no request can be sent with; a command checks an
        ``openai`` config with it (:func:`~agentworld_envs.backends.check_backend_config`)
        before it makes anything."""
        urls = [base_url] if isinstance(base_url, str) else base_url
        if not isinstance(urls, list | tuple) or not urls:
            raise ValueError("base_url must name at least one server")
        for url in urls:
            _check_url(url)
        problems = [f"{name} must be {rule}, not {value!r}" for name, value, fits, rule in (
            ("model", model, isinstance(model, str), "a model name (a string)"),
            ("api_key_env", api_key_env, api_key_env is None or isinstance(api_key_env, str),
             "the name of an environment variable or null"),
            ("native_tools", native_tools, isinstance(native_tools, bool), "true or false"),
            ("timeout_s", timeout_s, _at_least(timeout_s, 0, float) and timeout_s != 0,
             "a number > 0"),
            ("max_retries", max_retries, _at_least(max_retries, 0, int), "an integer >= 0"),
            ("max_retry_after_s", max_retry_after_s, _at_least(max_retry_after_s, 0, float),
             "a number >= 0"),
            ("concurrency", concurrency, _at_least(concurrency, 1, int), "an integer >= 1"),
            ("max_reply_bytes", max_reply_bytes, _at_least(max_reply_bytes, 1, int),
             "a positive integer"),
            ("backoff_s", backoff_s, _at_least(backoff_s, 0, float), "a number >= 0"),
            ("replica_cooldown_s", replica_cooldown_s, _at_least(replica_cooldown_s, 0, float),
             "a number >= 0"),
            ("jitter_seed", jitter_seed, jitter_seed is None or _at_least(jitter_seed, 0, int),
             "an integer >= 0 or null"),
        ) if not fits]
        if problems:
            raise ValueError("; ".join(problems))

    def _payload(self, request: ChatRequest, model: str) -> dict[str, Any]:
        sampling = request.sampling
        payload: dict[str, Any] = {
            "model": model,
            "messages": request.messages,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.top_p is not None:
            payload["top_p"] = sampling.top_p
        if sampling.top_k is not None:  # a top-level extra field, as vLLM and SGLang read it;
            payload["top_k"] = sampling.top_k or -1  # their "all" (older vLLM, SGLang refuse 0)
        if sampling.seed is not None:
            payload["seed"] = sampling.seed
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        if request.tools and self.native_tools:
            payload["tools"] = [_tool_schema(tool) for tool in request.tools]
        payload.update(sampling.extra)
        return payload

    def _request(self, payload: dict[str, Any]) -> Completion:
        """Send one payload (outside a batch); raise its error."""
        return first_error_or_completions(_run(lambda: self._batch([payload])))[0]

    def _secrets(self) -> tuple[dict[str, str], list[str]]:
        """The request's headers and the credentials to mask.

        Raises:
            BackendError: the key holds what a header cannot carry (it is never shown).
        """
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        headers = {"Content-Type": "application/json"}
        if key:
            if not (key.isascii() and key.isprintable() and key == key.strip()):
                raise BackendError(
                    f"the API key in ${self.api_key_env} is not printable ASCII without spaces "
                    "around it, so no HTTP header can carry it (a line break or carriage return "
                    "read from a file?): set the variable to the key alone")
            headers["Authorization"] = f"Bearer {key}"
        return headers, [*self._url_secrets, *([key] if key else [])]

    def _status_hint(self, status: int) -> str:
        """How to fix a request refused with ``status``, where the status says; else ``""``."""
        if status in (401, 403):
            if not self.api_key_env:
                return " (no API key was sent: api_key_env names the variable that holds it)"
            state = "set" if os.environ.get(self.api_key_env) else "not set"
            return f" (the API key is read from ${self.api_key_env}, which is {state} here)"
        if status == 404:
            return (f" (base_url must be the server's API root, such as "
                    f"http://localhost:8000/v1, and the server must serve model {self.model!r})")
        return ""

    async def _batch(self, payloads: list[dict[str, Any]], scope: CallScope | None = None
                     ) -> list[Completion | BackendError]:
        loop, task = running = (asyncio.get_running_loop(), asyncio.current_task())
        with _REFUSALS:
            self._running.add(running)  # type: ignore[arg-type]
        try:
            with stopped_with(scope, lambda: loop.call_soon_threadsafe(task.cancel)):
                return await self._send_all(payloads)
        finally:
            with _REFUSALS:
                self._running.discard(running)  # type: ignore[arg-type]

    async def _send_all(self, payloads: list[dict[str, Any]]) -> list[Completion | BackendError]:
        try:
            headers, secrets = self._secrets()
        except BackendError as exc:
            return [exc] * len(payloads)
        pool = httpx.Limits(max_connections=self.concurrency,
                            max_keepalive_connections=self.concurrency)
        async with httpx.AsyncClient(verify=_ssl_context(), limits=pool,
                                     timeout=self.timeout_s) as client:

            async def one(payload: dict[str, Any]) -> Completion | BackendError:
                async with self._slots.held():
                    return await self._send(client, payload, headers, secrets)

            return list(await asyncio.gather(*(one(p) for p in payloads)))

    async def _send(self, client: httpx.AsyncClient, payload: dict[str, Any],
                    headers: dict[str, str], secrets: list[str]) -> Completion | BackendError:
        """One request; refused for fields the server does not support, once more without them."""
        retried = False
        while True:
            sent = {k: v for k, v in payload.items() if k not in self._refused}
            if sent.get("stream"):  # its reply is a stream of events, not one JSON object
                return BackendError("a sampling's extra asks for a streamed reply ('stream'), "
                                    "which this backend does not read: leave it out")
            try:
                body = json.dumps(sent, ensure_ascii=True).encode("ascii")
            except (TypeError, ValueError) as exc:
                return BackendError(f"the request cannot be sent as JSON: {exc}")
            try:
                data, latency_s, repairs = await self._post(client, body, headers, secrets)
                completion = completion_from_reply(data, latency_s, secrets, repairs)
                self._warn_of_unknown_usage(completion)
                return completion
            except OpenAIRequestError as exc:
                error = self._learn_refusal(exc, sent)
                if error is not None or retried:
                    return error or exc
                retried = True
            except BackendError as exc:
                return exc
            except Exception as exc:  # noqa: BLE001 - costs this request only, reported
                return BackendError(redact(f"the request failed: {type(exc).__name__}: {exc}",
                                           secrets))

    def _learn_refusal(self, exc: OpenAIRequestError,
                       sent: dict[str, Any]) -> OpenAIRequestError | None:
        """None when ``exc`` refuses extension fields of ``sent`` only: they are never sent
        again (a warning names those new to this backend). Otherwise the error to report:
        one naming the fields of the OpenAI API that ``exc`` refuses, or ``exc`` itself."""
        if exc.status not in (400, 422):
            return exc
        named = refused_fields(exc.reply, sent.keys() - _NOT_REFUSABLE)
        if not named:
            return exc
        if named & _STANDARD:
            return OpenAIRequestError(
                f"the server refused the request field(s) {', '.join(sorted(named & _STANDARD))}"
                f", which this backend never leaves out (only top_k and extra fields are): "
                f"{exc}", url=exc.url, status=exc.status, attempts=exc.attempts, reply=exc.reply)
        with _REFUSALS:
            new = named - self._refused
            self._refused |= named
        if new:
            warnings.warn(f"{exc.url} refused the request field(s) {', '.join(sorted(new))} "
                          f"(HTTP {exc.status}): this backend sends them no more",
                          RuntimeWarning, stacklevel=2)
        return None

    def _warn_of_unknown_usage(self, completion: Completion) -> None:
        """Warn, the first time only, of a reply that left token counts out (its
        :class:`~agentworld_envs.protocol.chat.Usage` holds None for them)."""
        missing = unknown_usage(completion)
        if not missing:
            return
        with _REFUSALS:
            first, self._usage_warned = not self._usage_warned, True
        if first:
            warnings.warn(f"the server of {self.model!r} sent a reply without "
                          f"{', '.join(f'usage.{name}' for name in missing)}: its token counts "
                          f"are unknown (None), not summed as 0 (replies that lack them list "
                          f"them in raw[{USAGE_UNKNOWN_KEY!r}])", RuntimeWarning, stacklevel=2)

    def _wait_window(self, retries: int, hinted_s: float | None) -> tuple[float, float]:
        """The least and the most to wait before retry ``retries + 1``, the wait being drawn
        between them: half the backoff and the whole of it (equal jitter), or after a server's
        ``Retry-After`` of ``hinted_s`` (capped), that and up to half the backoff more, within
        the cap."""
        # The exponent is bounded so that many retries never overflow a float.
        backoff = min(self.backoff_s * 2**min(retries, 64), _MAX_BACKOFF_S)
        if hinted_s is None:
            return backoff / 2, backoff
        least = min(hinted_s, self.max_retry_after_s)
        return least, min(least + backoff / 2, self.max_retry_after_s)

    def _failure(self, message: str, url: str, status: int | None, attempts: int,
                 secrets: list[str], reply: str = "") -> OpenAIRequestError:
        return OpenAIRequestError(redact(message, secrets), url=redact(url),
                                  status=status, attempts=attempts, reply=reply)

    async def _post(self, client: httpx.AsyncClient, body: bytes, headers: dict[str, str],
                    secrets: list[str]) -> tuple[dict[str, Any], float, list[str]]:
        """POST to ``/chat/completions`` with retries and fail-over.

        Returns:
            The decoded response JSON, the latency of the successful attempt and what decoding
            repaired (see :func:`_json_object`).
        """
        attempts = retries = failovers = 0
        budget_s = self.timeout_s * (self.max_retries + 1)
        budget = f"the call's {budget_s:g} s, timeout_s x (max_retries + 1)"
        deadline = time.monotonic() + budget_s
        url, error, status = "", "", None
        while True:
            left = deadline - time.monotonic()
            if attempts and left <= 0:
                raise self._failure(f"POST {url} failed after {attempts} attempt(s): {error} "
                                    f"(not retried: nothing is left of {budget})",
                                    url, status, attempts, secrets)
            index = self._replicas.pick()
            base, auth = self._replicas.plain[index]
            url = f"{base}/chat/completions"
            attempts += 1
            status = None
            hinted_wait: float | None = None
            attempt_s = min(self.timeout_s, left)
            at_end = left <= self.timeout_s  # the attempt may run to the call's end
            start = time.perf_counter()
            try:
                response, content = await asyncio.wait_for(  # asyncio.timeout: Python 3.11
                    self._fetch(client, url, body, headers, auth), attempt_s)
            except (asyncio.TimeoutError, TimeoutError, httpx.TimeoutException):
                error = (f"timeout after {round(attempt_s, _TIMEOUT_DECIMALS):g} s"
                         f"{f', the end of {budget}' if at_end else ''} (a slow server needs a "
                         f"larger timeout_s in the backend config: {CPU_SERVER_TIMEOUT_HINT})")
                if at_end:
                    self._replicas.failed(index)
                    raise self._failure(f"POST {url} failed after {attempts} attempt(s): "
                                        f"{error}", url, status, attempts, secrets) from None
            except httpx.DecodingError as exc:  # a body its Content-Encoding does not fit
                error = f"undecodable reply ({exc})"
            except httpx.HTTPError as exc:  # refused, no such host, TLS, cut off...: say which
                error = f"connection error ({type(exc).__name__}{f': {exc}' if str(exc) else ''})"
            else:
                latency_s = time.perf_counter() - start
                status = response.status_code
                if content is None:
                    raise self._failure(
                        f"POST {url} failed (not retried): HTTP {status} with a reply over "
                        f"max_reply_bytes ({self.max_reply_bytes})", url, status, attempts, secrets)
                data, repairs = _json_object(content) if response.is_success else (None, [])
                if data is not None:
                    self._replicas.answered(index)
                    return data, latency_s, repairs
                snippet = _snippet(response, content, secrets)
                if response.is_success:  # a reply cut short (its length unsaid), or broken
                    error = f"HTTP {status} without a JSON object: {snippet}"
                elif status not in _RETRIED:
                    raise self._failure(f"POST {url} failed (not retried): HTTP {status}: "
                                        f"{snippet}{self._status_hint(status)}",
                                        url, status, attempts, secrets,
                                        _reply_text(response, content, secrets))
                else:
                    error = f"HTTP {status}: {snippet}"
                    hinted_wait = retry_after_s(response.headers.get("retry-after"))
            if status != 429:  # the replica itself failed; rate limits are only backed off
                self._replicas.failed(index)
                if failovers < len(self._replicas.urls) - 1 and self._replicas.any_healthy():
                    failovers += 1
                    continue
            if retries >= self.max_retries:
                raise self._failure(f"POST {url} failed after {attempts} attempt(s): {error}",
                                    url, status, attempts, secrets)
            least, most = self._wait_window(retries, hinted_wait)
            # Whether to retry never depends on the draw: on the longest backoff, or on the
            # server's own wait (the jitter above it is cut at the call's end).
            needed = most if hinted_wait is None else least
            left = deadline - time.monotonic()
            if needed > left:
                raise self._failure(
                    f"POST {url} failed after {attempts} attempt(s): {error} (not retried: "
                    f"waiting {needed:g} s would outlast {budget})", url, status, attempts,
                    secrets)
            await asyncio.sleep(self._jitter.uniform(least, min(most, left)))
            retries += 1

    async def _fetch(self, client: httpx.AsyncClient, url: str, body: bytes,
                     headers: dict[str, str], auth: httpx.BasicAuth | None,
                     ) -> tuple[httpx.Response, bytes | None]:
        """POST and read the reply; its content is None when it runs past ``max_reply_bytes``."""
        async with client.stream("POST", url, content=body, headers=headers,
                                 auth=auth or httpx.USE_CLIENT_DEFAULT) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_reply_bytes:
                    return response, None
                chunks.append(chunk)
            return response, b"".join(chunks)


def _jitter_draws(seed: int | None) -> random.Random:
    """The draws that jitter retry waits: from ``seed``, else from the operating system (no
    state, so that no copy of a backend, pickled or forked, draws what another draws)."""
    return random.SystemRandom() if seed is None else random.Random(seed)


def _json_object(content: bytes) -> tuple[dict[str, Any] | None, list[str]]:
    """A reply body's JSON object (None if it holds none) and what reading it repaired: bytes
    that are not UTF-8 (which JSON between systems must be, RFC 8259) read as U+FFFD."""
    repairs = []
    try:
        data = json.loads(content)
    except UnicodeDecodeError:
        text = content.decode("utf-8", "replace")
        count = text.count("\ufffd") - content.count("\ufffd".encode())
        repairs.append(f"replaced {count} byte sequence(s) that are not UTF-8 with U+FFFD")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
    except (ValueError, RecursionError):
        data = None
    return (data, repairs) if isinstance(data, dict) else (None, [])


def _at_least(value: Any, least: float, kind: type) -> bool:
    """Whether ``value`` is a number of ``kind`` (an int counts as a float; a bool as
    neither) of at least ``least``."""
    kinds = (int, float) if kind is float else (int,)
    return isinstance(value, kinds) and not isinstance(value, bool) and value >= least


def _check_url(url: object) -> None:
    """Raise ``ValueError`` unless ``url`` is an http(s) URL with a host (credentials in the
    message masked)."""
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # a malformed host such as "http://[::1"
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        shown = repr(redact(url)) if isinstance(url, str) else type(url).__name__
        raise ValueError(f"base_url must be an http:// or https:// URL with a host, such as "
                         f"http://localhost:8000/v1, not {shown}")


def _reply_text(response: httpx.Response, content: bytes, secrets: list[str],
                limit: int = _REPLY_READ) -> str:
    """The start of a reply's text, credentials masked."""
    return redact(content.decode(response.encoding or "utf-8", "replace"), secrets)[:limit]


def _snippet(response: httpx.Response, content: bytes, secrets: list[str]) -> str:
    """The start of a reply's text for an error message, credentials masked."""
    return _reply_text(response, content, secrets, _SNIPPET)


_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}


def probe_tool_support(backend: OpenAIBackend, model: str | None = None) -> str:
    """Classify a model's tool calling from one request asking it to call a trivial tool.

    Args:
        backend: The backend (server, key, retries) to probe through.
        model: Model to probe; defaults to the backend's model.

    Returns:
        ``"native"`` (the API returned ``tool_calls``), ``"text_leaked"`` (a call written into the
        content) or ``"no_tools"`` (no call, or the server rejected the tools).

    Raises:
        BackendError: the server could not be asked (unreachable, or failing after retries);
            the error names the URL and the cause.
    """
    request = ChatRequest(
        messages=[{
            "role": "user",
            "content": "What is the weather in Paris? Call the get_weather tool to find out.",
        }],
        tools=[_PROBE_TOOL],
        sampling=SamplingParams(max_tokens=1024),
    )
    payload = backend._payload(request, model or backend.model)
    payload["tools"] = [_PROBE_TOOL]
    try:
        completion = backend._request(payload)
    except OpenAIRequestError as exc:
        if exc.status in (400, 422) and "tool" in exc.reply.lower():
            return "no_tools"
        raise
    if completion.raw["choices"][0]["message"].get("tool_calls"):
        return "native"
    parsed = parse_action(strip_thinking(completion.text))
    return "text_leaked" if parsed.calls or parsed.errors else "no_tools"
