"""The stand-in's Ollama client (not Local Agent Bench's code): stdlib urllib, `$OLLAMA_BASE_URL`."""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any


def base_url() -> str:
    return os.environ.get("OLLAMA_BASE_URL", "http://127.0.0.1:11434").rstrip("/")


def call(path: str, body: dict[str, Any] | None = None, timeout: float = 300.0) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base_url() + path, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode())


def chat(model: str, messages: list[dict[str, str]]) -> str:
    """One reply: `stream: false`, temperature 0 and nothing else."""
    body = {"model": model, "messages": messages, "stream": False, "options": {"temperature": 0}}
    return str(call("/api/chat", body).get("message", {}).get("content", ""))
