"""An OpenAI-compatible chat client (``POST /v1/chat/completions``), as llama.cpp serves it.

Requests carry temperature, seed, max_tokens and ``cache_prompt: false`` (``true`` only when the
profile asks for prompt-cache reuse; per scenario, a scenario's first request says ``false``, so it
reads nothing another scenario left, ``begin_scenario``); the client never
reads proxies from the environment (``trust_env=False``). Each reply records ``usage`` and the
server's own ``timings``. Transport errors, timeouts, HTTP error statuses and unreadable
replies raise ``EngineError``, as the subclass that names the failure (``engine_error_for``):

- ``EngineUnreachable``: no connection could be made (refused, no route, connect timeout);
- ``ContextOverflow``: HTTP 400 or 413 whose body says the prompt exceeds the context (llama.cpp:
  "the request exceeds the available context size", type ``exceed_context_size_error``);
- ``ModelNotLoaded``: an error whose body says the model is loading, not found, not loaded or
  failed to load (llama.cpp's 503 "Loading model", Ollama's 404 "model ... not found");
- ``EngineTimeout``: no answer within the request timeout;
- ``EngineError``: anything else (other HTTP errors, a dropped connection, an unreadable reply).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Self

import httpx

from harness.clients.errors import ContextOverflow, EngineError, EngineTimeout, EngineUnreachable, ModelNotLoaded

__all__ = ["ChatReply", "EngineError", "OpenAIClient", "ToolCall"]


@dataclass
class ChatReply:
    content: str
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] | None = None
    seconds: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass(frozen=True)
class ToolCall:
    """One native tool call as the engine returned it. ``arguments`` is the JSON text (Ollama's
    object is serialized), ``id`` is the engine's call id (empty when it gave none)."""

    name: str
    arguments: str
    id: str = ""


class HttpClient:
    """What every engine client shares: one httpx client that ignores proxy settings from the
    environment, a timeout, and transport failures turned into EngineError."""

    def __init__(self, base_url: str, *, timeout: float = 300.0, transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self._http = httpx.Client(
            base_url=base_url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            trust_env=False,
            transport=transport,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def begin_scenario(self, scenario_id: str = "") -> None:
        """A scenario starts: a client whose engine keeps a prompt cache starts it from an empty one."""

    def _post_json(self, path: str, payload: dict[str, Any]) -> tuple[httpx.Response, float]:
        """POST a JSON body; the 200 response and the seconds it took, or EngineError."""
        started = time.monotonic()
        response = self._send("POST", path, json=payload)
        seconds = time.monotonic() - started
        if response.status_code != 200:
            raise engine_error_for(response.status_code, path, response.text)
        return response, seconds

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.ConnectTimeout:
            raise EngineUnreachable(
                f"transport error: no connection within {min(self.timeout, 10.0):g}s: {method} {self.base_url}{path}"
            ) from None
        except httpx.ConnectError as exc:
            raise EngineUnreachable(f"transport error: {method} {self.base_url}{path}: {exc}") from None
        except httpx.TimeoutException:
            raise EngineTimeout(f"timeout after {self.timeout:g}s: {method} {self.base_url}{path}") from None
        except httpx.HTTPError as exc:
            raise EngineError(f"transport error: {method} {self.base_url}{path}: {exc}") from None


class OpenAIClient(HttpClient):
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout: float = 300.0,
        transport: httpx.BaseTransport | None = None,
        cache_prompt: bool = False,
        per_scenario: bool = False,
    ) -> None:
        super().__init__(_root(base_url), timeout=timeout, transport=transport)
        self.model = model
        self.cache_prompt = cache_prompt  # True only in a profile that accepts a prompt cache
        # the cache per scenario: a scenario's first request reads nothing from it, its later ones
        # only what the scenario's own earlier requests left (the engine keeps one slot)
        self.per_scenario = per_scenario
        self._first = True

    def begin_scenario(self, scenario_id: str = "") -> None:
        self._first = True

    def ping(self) -> None:
        """Check that the server answers at all (``GET /v1/models``); EngineError if not."""
        response = self._send("GET", "/v1/models")
        if response.status_code >= 500:
            raise EngineError(f"{self.base_url}/v1/models answered HTTP {response.status_code}")

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatReply:
        """One non-streaming chat completion. ``tools`` are sent with ``tool_choice: "auto"``."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "cache_prompt": self.cache_prompt and not (self.per_scenario and self._first),
            "stream": False,
        }
        self._first = False
        if seed is not None:
            payload["seed"] = seed
        if response_format is not None:
            payload["response_format"] = response_format
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = "auto"
        if stop:
            payload["stop"] = stop
        response, seconds = self._post_json("/v1/chat/completions", payload)
        return _parse_reply(response, seconds)


CONTEXT_OVERFLOW = re.compile(
    r"exceed_context_size|exceeds? the (available )?context|context (size|length|window) (is )?exceeded"
    r"|maximum context length|prompt is too long",
    re.IGNORECASE,
)
MODEL_NOT_LOADED = re.compile(
    r"loading model|model is loading|failed to load model|unable to load model|no model (is )?loaded"
    r"|model\b[^.]{0,80}\b(not found|does not exist|not loaded|requires more system memory)",
    re.IGNORECASE,
)


def engine_error_for(status: int | None, path: str, body: str) -> EngineError:
    """The error for an engine's error answer (``status`` None: an error inside a 200 reply)."""
    message = f"HTTP {status} from {path}: {snippet(body)}" if status is not None else f"{path} error: {snippet(body)}"
    if status in (None, 400, 413) and CONTEXT_OVERFLOW.search(body):
        return ContextOverflow(message)
    if MODEL_NOT_LOADED.search(body):
        return ModelNotLoaded(message)
    return EngineError(message)


def _root(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _parse_reply(response: httpx.Response, seconds: float) -> ChatReply:
    try:
        body = response.json()
        choice = body["choices"][0]
        content = choice["message"].get("content") or ""
        tool_calls = [read_tool_call(call) for call in choice["message"].get("tool_calls") or []]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise EngineError(f"unreadable reply from /v1/chat/completions: {snippet(response.text)}") from None
    return ChatReply(
        content=content,
        usage=body.get("usage") or {},
        timings=body.get("timings"),
        seconds=seconds,
        raw=body,
        finish_reason=choice.get("finish_reason"),
        tool_calls=tool_calls,
    )


def read_tool_call(call: dict[str, Any]) -> ToolCall:
    """An OpenAI (``arguments``: JSON text) or Ollama (``arguments``: object) tool call."""
    function = call["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(name=str(function.get("name") or ""), arguments=arguments, id=str(call.get("id") or ""))


def snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
