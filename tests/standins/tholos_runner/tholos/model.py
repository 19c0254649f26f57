"""Talking to the model (a stand-in written by the repro project for its tests; not Tholos-Bench's
runner): the chat request, its one HTTP call, and the step read from the reply.

Each request carries the run's whole message list, temperature 0, max_tokens 512,
`chat_template_kwargs: {enable_thinking: false}` and, per `--json-mode`, a `json_schema`
response_format (the step's schema), a `json_object` one, or none; never `cache_prompt`. The body
is serialised here (compact JSON), so its bytes do not depend on the httpx version. The HTTP
client is made through this module's `httpx` (repro's driver observes the calls there).

A reply is a valid step when its content is one JSON object whose `tool` is one of the agent's
tools and whose `args` has exactly that tool's arguments (their values are the tool's to check).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

TEMPERATURE = 0.0
MAX_TOKENS = 512
TIMEOUT_S = 120.0
JSON_MODES = ("schema", "object", "none")


class EngineError(Exception):
    """The server did not answer with a chat completion (the run stops)."""


@dataclass(frozen=True)
class Profile:
    """Where the model is and how to ask it."""

    base_url: str
    model: str
    json_mode: str = "schema"


@dataclass(frozen=True)
class Reply:
    content: str
    prompt_tokens: int
    completion_tokens: int


def request_body(profile: Profile, messages: list[dict[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": profile.model,
        "messages": messages,
        "temperature": TEMPERATURE,
        "max_tokens": MAX_TOKENS,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    if profile.json_mode == "schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "step", "schema": schema}}
    elif profile.json_mode == "object":
        body["response_format"] = {"type": "json_object"}
    return body


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def count(usage: Any, key: str) -> int:
    """One token count of the server's usage (0 when it gave none, or not a whole number)."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class Client:
    """One HTTP client per scenario."""

    def __init__(self, profile: Profile, transport: Any = None) -> None:
        if profile.json_mode not in JSON_MODES:
            raise ValueError(f"--json-mode {profile.json_mode!r}: one of {', '.join(JSON_MODES)}")
        self.profile = profile
        self.url = profile.base_url.rstrip("/") + "/chat/completions"
        self.http = httpx.Client(timeout=TIMEOUT_S, transport=transport, trust_env=False)

    def complete(self, messages: list[dict[str, Any]], schema: dict[str, Any]) -> Reply:
        body = encode(request_body(self.profile, messages, schema))
        try:
            response = self.http.post(self.url, content=body, headers={"Content-Type": "application/json"})
        except httpx.HTTPError as error:
            raise EngineError(f"{type(error).__name__}") from None
        if response.status_code != 200:
            raise EngineError(f"HTTP {response.status_code}")
        try:
            answer = response.json()
            message = answer["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError("the answer is not a chat completion") from None
        content = message.get("content") if isinstance(message, dict) else None
        usage = answer.get("usage")
        return Reply(
            content if isinstance(content, str) else "",
            count(usage, "prompt_tokens"),
            count(usage, "completion_tokens"),
        )

    def close(self) -> None:
        self.http.close()


def parse_step(content: str, tools: dict[str, tuple[str, ...]]) -> tuple[dict[str, Any] | None, str]:
    """(the step, "") when `content` is a valid step for an agent with these tools (name ->
    argument names), else (None, why not)."""
    try:
        value = json.loads(content)
    except ValueError:
        return None, "the reply is not one JSON object"
    if not isinstance(value, dict):
        return None, "the reply is JSON but not an object"
    tool, args, thought = value.get("tool"), value.get("args"), value.get("thought", "")
    if not isinstance(tool, str) or tool not in tools:
        return None, f"tool must be one of: {', '.join(tools)}"
    if not isinstance(args, dict):
        return None, "args must be an object"
    if set(args) != set(tools[tool]):
        return None, f"{tool} takes exactly these arguments: {', '.join(tools[tool]) or 'none'}"
    return {"thought": thought if isinstance(thought, str) else "", "tool": tool, "args": args}, ""
