"""The stand-in's Ollama client (not LAB's code): stdlib urllib against the base URL it is given."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class OllamaError(RuntimeError):
    def __init__(self, message: str, failure_reason: str = "OLLAMA_UNREACHABLE") -> None:
        super().__init__(message)
        self.failure_reason = failure_reason


class Ollama:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def call(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            reason = "MODEL_NOT_INSTALLED" if error.code == 404 else "OLLAMA_UNREACHABLE"
            raise OllamaError(f"{path}: HTTP {error.code}", reason) from error
        except (OSError, ValueError) as error:
            raise OllamaError(f"{path}: {error}") from error

    def models(self) -> list[str]:
        return [str(m.get("name")) for m in self.call("/api/tags").get("models", [])]

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        """One reply: `stream: false`, temperature 0 and no other option."""
        body = {"model": model, "messages": messages, "stream": False, "options": {"temperature": 0}}
        return str(self.call("/api/chat", body).get("message", {}).get("content", ""))
