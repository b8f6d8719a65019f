"""Backend for any OpenAI-compatible chat server (vLLM, SGLang, ``transformers serve``), over httpx.

Requests of a batch run concurrently; failed requests are retried with exponential backoff; several
server replicas share the load, and a failing replica sits out a cool-down.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from agentworld_envs.backends.base import (
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    SamplingParams,
    Usage,
)
from agentworld_envs.protocol.tool_calls import ToolCall, parse_action

__all__ = [
    "OpenAIBackend",
    "OpenAIRequestError",
    "probe_tool_support",
    "strip_think",
    "text_tool_calls",
]

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_SNIPPET = 300


class OpenAIRequestError(BackendError):
    """A chat request failed; ``status`` is the last HTTP status, or None for transport errors."""

    def __init__(self, message: str, *, url: str, status: int | None, attempts: int) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = attempts


def strip_think(text: str) -> str:
    """Drop ``<think>...</think>`` reasoning, and any reasoning before a bare ``</think>``."""
    text = _THINK.sub("", text)
    return text.rpartition("</think>")[2]


def text_tool_calls(text: str) -> list[ToolCall]:
    """Tool calls written into plain text (Hermes tags, JSON), reasoning ignored."""
    return parse_action(strip_think(text)).calls


def _tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """OpenAI tool format; a bare function schema ``{"name", "parameters"}`` is wrapped."""
    if "type" not in tool and "name" in tool:
        return {"type": "function", "function": tool}
    return tool


def _native_calls(raw_calls: list[Any]) -> tuple[list[ToolCall], str | None]:
    """Read native ``tool_calls``.

    Returns:
        The calls, and None; or, when any call cannot be read, no calls and the raw calls as
        ``{"name", "arguments": "<raw>"}`` JSON text, so that parsing the action reports the error.
    """
    calls = []
    for item in raw_calls:
        item = item if isinstance(item, dict) else {}
        function = item.get("function") if isinstance(item.get("function"), dict) else item
        name = function.get("name")
        calls.append({
            "id": item.get("id"),
            "name": name if isinstance(name, str) else "",
            "arguments": function.get("arguments") or "",
        })
    text = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
    parsed = parse_action(text)
    if parsed.errors:
        bare = [{"name": c["name"], "arguments": c["arguments"]} for c in calls]
        return [], json.dumps(bare[0] if len(bare) == 1 else bare, ensure_ascii=False)
    return parsed.calls, None


def _message_text(content: Any) -> str:
    """Content as text; a list of content parts is joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _completion_from_response(data: dict[str, Any], latency_s: float) -> Completion:
    """Turn a chat-completions response into a :class:`Completion`."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError(f"response has no choices: {json.dumps(data)[:_SNIPPET]}")
    choice = choices[0]
    message = choice.get("message") or {}
    text = _message_text(message.get("content"))
    if isinstance(message.get("tool_calls"), list) and message["tool_calls"]:
        tool_calls, malformed = _native_calls(message["tool_calls"])
        text = malformed if malformed is not None else text
    else:
        tool_calls = text_tool_calls(text)
    usage = data.get("usage") or {}
    return Completion(
        text=text,
        tool_calls=tool_calls,
        finish_reason=choice.get("finish_reason") or "stop",
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
        latency_s=latency_s,
        raw=data,
    )


class _Replicas:
    """Round-robin over server replicas; a failed replica sits out ``cooldown_s``. Thread-safe."""

    def __init__(self, urls: list[str], cooldown_s: float) -> None:
        self.urls = urls
        self._cooldown_s = cooldown_s
        self._down_until = [0.0] * len(urls)
        self._failed_at = [float("-inf")] * len(urls)
        self._next = 0
        self._lock = threading.Lock()

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
        base_url: Server base URL including ``/v1``, or a list of replica URLs.
        api_key_env: Environment variable holding the API key, read at request time; None or an
            unset variable sends no key.
        timeout_s: Per-request HTTP timeout.
        max_retries: Retries after the first attempt, on 429, 5xx, connection errors and timeouts.
        backoff_s: First backoff; it doubles on each retry.
        concurrency: Most requests in flight at once.
        native_tools: Send tool schemas as the API's ``tools``; when False the caller is expected
            to describe tools in the prompt, and calls are read from the text.
        replica_cooldown_s: How long a failing replica stays out of rotation.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | list[str],
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        concurrency: int = 8,
        native_tools: bool = True,
        replica_cooldown_s: float = 30.0,
    ) -> None:
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError("base_url must name at least one server")
        if concurrency < 1 or max_retries < 0:
            raise ValueError("concurrency must be >= 1 and max_retries >= 0")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.concurrency = concurrency
        self.native_tools = native_tools
        self.replica_cooldown_s = replica_cooldown_s
        self._replicas = _Replicas([u.rstrip("/") for u in urls], replica_cooldown_s)
        self._client = httpx.Client(
            timeout=timeout_s,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata; the key's variable name only, never the key."""
        return {
            "name": self.name,
            "model": self.model,
            "base_urls": list(self._replicas.urls),
            "api_key_env": self.api_key_env,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "backoff_s": self.backoff_s,
            "concurrency": self.concurrency,
            "native_tools": self.native_tools,
            "replica_cooldown_s": self.replica_cooldown_s,
        }

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete every request concurrently; results come back in input order.

        Raises:
            BackendError: when any request fails after its retries.
        """
        if not requests:
            return []
        if len(requests) == 1:
            return [self._chat(requests[0])]
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)))
        try:
            futures = [pool.submit(self._chat, request) for request in requests]
            return [future.result() for future in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _payload(self, request: ChatRequest, model: str) -> dict[str, Any]:
        sampling = request.sampling
        payload: dict[str, Any] = {
            "model": model,
            "messages": request.messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            payload["seed"] = sampling.seed
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        if request.tools and self.native_tools:
            payload["tools"] = [_tool_schema(tool) for tool in request.tools]
        payload.update(sampling.extra)
        return payload

    def _chat(self, request: ChatRequest, model: str | None = None) -> Completion:
        data, latency_s = self._post(self._payload(request, model or self.model))
        return _completion_from_response(data, latency_s)

    def _headers(self) -> tuple[dict[str, str], str | None]:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return ({"Authorization": f"Bearer {key}"} if key else {}), key

    def _post(self, payload: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """POST to ``/chat/completions`` with retries and fail-over.

        Returns:
            The response JSON and the latency of the successful attempt.
        """
        headers, key = self._headers()
        attempts = retries = failovers = 0
        while True:
            index = self._replicas.pick()
            url = f"{self._replicas.urls[index]}/chat/completions"
            attempts += 1
            status: int | None = None
            start = time.perf_counter()
            try:
                response = self._client.post(url, json=payload, headers=headers)
            except httpx.TimeoutException:
                error = f"timeout after {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                error = f"connection error ({type(exc).__name__})"
            else:
                latency_s = time.perf_counter() - start
                status = response.status_code
                if response.is_success:
                    self._replicas.answered(index)
                    return self._json(response, url, attempts, key), latency_s
                error = f"HTTP {status}: {_redact(response.text, key)[:_SNIPPET]}"
                if status != 429 and status < 500:
                    raise OpenAIRequestError(
                        f"POST {url} failed (not retried): {error}",
                        url=url, status=status, attempts=attempts,
                    )
            if status != 429:  # the replica itself failed; rate limits are only backed off
                self._replicas.failed(index)
                if failovers < len(self._replicas.urls) - 1 and self._replicas.any_healthy():
                    failovers += 1
                    continue
            if retries >= self.max_retries:
                raise OpenAIRequestError(
                    f"POST {url} failed after {attempts} attempt(s): {error}",
                    url=url, status=status, attempts=attempts,
                )
            time.sleep(self.backoff_s * 2**retries)
            retries += 1

    @staticmethod
    def _json(response: httpx.Response, url: str, attempts: int, key: str | None) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise OpenAIRequestError(
                f"POST {url} returned HTTP {response.status_code} without a JSON object: "
                f"{_redact(response.text, key)[:_SNIPPET]}",
                url=url, status=response.status_code, attempts=attempts,
            )
        return data


def _redact(text: str, key: str | None) -> str:
    return text.replace(key, "***") if key else text


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
        content), ``"no_tools"`` (no call, or the server rejected the tools) or ``"error"``.
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
        data, latency_s = backend._post(payload)
        completion = _completion_from_response(data, latency_s)
    except OpenAIRequestError as exc:
        rejected = exc.status in (400, 422) and "tool" in str(exc).lower()
        return "no_tools" if rejected else "error"
    except BackendError:
        return "error"
    if (data["choices"][0].get("message") or {}).get("tool_calls"):
        return "native"
    parsed = parse_action(strip_think(completion.text))
    return "text_leaked" if parsed.calls or parsed.errors else "no_tools"
