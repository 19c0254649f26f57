"""An Ollama chat client (``POST /api/chat``) with the same reply shape as ``harness.clients.openai_compat``.

Requests are non-streaming (``stream: false``); sampling goes inside ``options``
(``temperature``, ``seed``, ``num_predict``, ``num_ctx``); a JSON schema constrains the reply
through ``format``. Each reply records Ollama's own counters (``prompt_eval_count``,
``eval_count`` and their durations in nanoseconds) and the same figures under llama.cpp's timing
names (``predicted_per_second`` ...), so gates and results read one shape for both engines.
Transport errors, timeouts, HTTP error statuses and unreadable replies raise ``EngineError`` (the
subclass ``harness.clients.openai_compat.engine_error_for`` picks, as for llama.cpp).
Stdlib and httpx only.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from harness.clients.errors import EngineError
from harness.clients.openai_compat import ChatReply, HttpClient, engine_error_for, read_tool_call, snippet

__all__ = ["ChatReply", "EngineError", "OllamaClient", "ollama_timings", "format_from_response_format"]

NS = 1_000_000_000


class OllamaClient(HttpClient):
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout: float = 300.0,
        num_ctx: int | None = None,
        keep_alive: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url.strip().rstrip("/"), timeout=timeout, transport=transport)
        self.model = model
        self.num_ctx = num_ctx
        self.keep_alive = keep_alive

    def ping(self) -> None:
        """Check that the server answers (``GET /api/version``); EngineError if not."""
        response = self._send("GET", "/api/version")
        if response.status_code != 200:
            raise EngineError(f"{self.base_url}/api/version answered HTTP {response.status_code}")

    def version(self) -> str:
        response = self._send("GET", "/api/version")
        if response.status_code != 200:
            raise EngineError(f"HTTP {response.status_code} from /api/version: {snippet(response.text)}")
        try:
            return str(response.json()["version"])
        except (ValueError, KeyError, TypeError):
            raise EngineError(f"unreadable reply from /api/version: {snippet(response.text)}") from None

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
        format: dict[str, Any] | str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        num_ctx: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatReply:
        """One non-streaming chat. ``response_format`` (OpenAI style) or ``format`` (Ollama style);
        ``tools`` in OpenAI's shape (Ollama reads the same); OpenAI-style tool messages are
        converted (see ``ollama_messages``)."""
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        if stop:
            options["stop"] = stop
        if seed is not None:
            options["seed"] = seed
        ctx = num_ctx if num_ctx is not None else self.num_ctx
        if ctx is not None:
            options["num_ctx"] = ctx
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": ollama_messages(messages),
            "stream": False,
            "options": options,
        }
        if tools:
            payload["tools"] = tools
        fmt = format if format is not None else format_from_response_format(response_format)
        if fmt is not None:
            payload["format"] = fmt
        if self.keep_alive is not None:
            payload["keep_alive"] = self.keep_alive
        response, seconds = self._post_json("/api/chat", payload)
        return _parse_reply(response, seconds)


def ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages as ``/api/chat`` takes them: tool-call arguments as objects, no call
    ids or types, and each ``role: tool`` result named by its call's function (``tool_name``)."""
    names: dict[str, str] = {}
    out = []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = call["function"]
                names[str(call.get("id", ""))] = function["name"]
                arguments = function["arguments"]
                calls.append(
                    {
                        "function": {
                            "name": function["name"],
                            "arguments": json.loads(arguments) if isinstance(arguments, str) else arguments,
                        }
                    }
                )
            message["tool_calls"] = calls
        if message.get("role") == "tool":
            message["tool_name"] = names.get(str(message.pop("tool_call_id", "")), "")
        out.append(message)
    return out


def format_from_response_format(response_format: dict[str, Any] | None) -> dict[str, Any] | str | None:
    """Ollama's ``format`` for an OpenAI-style ``response_format``: the schema itself, or "json"."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema")
        if not isinstance(schema, dict):
            raise ValueError("response_format json_schema without a schema")
        return schema
    if kind == "json_object":
        return "json"
    if kind in (None, "text"):
        return None
    raise ValueError(f"unsupported response_format type {kind!r}")


def ollama_timings(body: dict[str, Any]) -> dict[str, Any]:
    """Ollama's counters, plus the same figures under llama.cpp's timing names."""
    raw = {
        key: body.get(key)
        for key in (
            "total_duration",
            "load_duration",
            "prompt_eval_count",
            "prompt_eval_duration",
            "eval_count",
            "eval_duration",
        )
    }
    out: dict[str, Any] = {key: value for key, value in raw.items() if value is not None}
    prompt_n, prompt_ns = body.get("prompt_eval_count"), body.get("prompt_eval_duration")
    predicted_n, predicted_ns = body.get("eval_count"), body.get("eval_duration")
    if isinstance(prompt_n, int):
        out["prompt_n"] = prompt_n
    if isinstance(prompt_ns, (int, float)):
        out["prompt_ms"] = prompt_ns / 1e6
        if isinstance(prompt_n, int) and prompt_ns > 0:
            out["prompt_per_second"] = prompt_n * NS / prompt_ns
    if isinstance(predicted_n, int):
        out["predicted_n"] = predicted_n
    if isinstance(predicted_ns, (int, float)):
        out["predicted_ms"] = predicted_ns / 1e6
        if isinstance(predicted_n, int) and predicted_ns > 0:
            out["predicted_per_second"] = predicted_n * NS / predicted_ns
    return out


def _parse_reply(response: httpx.Response, seconds: float) -> ChatReply:
    try:
        body = response.json()
        message = body["message"]
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise TypeError("content is not text")
        tool_calls = [read_tool_call(call) for call in message.get("tool_calls") or []]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise EngineError(f"unreadable reply from /api/chat: {snippet(response.text)}") from None
    if body.get("error"):
        raise engine_error_for(None, "/api/chat", str(body["error"]))
    prompt_tokens = int(body.get("prompt_eval_count") or 0)
    completion_tokens = int(body.get("eval_count") or 0)
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return ChatReply(
        content=content,
        usage=usage,
        timings=ollama_timings(body),
        seconds=seconds,
        raw=body,
        finish_reason=body.get("done_reason"),
        tool_calls=tool_calls,
    )
