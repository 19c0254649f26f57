"""Hermes (PyPI `hermes-agent`): one turn is `hermes chat --query PROMPT --quiet --ignore-rules -m
MODEL`, LAB's command line. Hermes injects a system prompt of its own (today's date among it: the
clock is pinned) and offers the engine its own tools. It prints warnings beside the answer (a
security scanner it cannot find) and a `session_id:` line after it: those are kept apart, not taken
into the answer as LAB's adapter takes them. Its provider is the relay, declared in
`~/.hermes/config.yaml` (`provider: custom`)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.runtimes.base import RUNTIME_ROOT, Answer, Endpoint, RuntimeAdapter, RuntimeFailure

PROGRAM = RUNTIME_ROOT / "bin" / "hermes"
NOT_ANSWER = re.compile(r"^\s*(⚠|session_id:\s)")


class Hermes(RuntimeAdapter):
    kind = "hermes"

    def env(self) -> dict[str, str]:
        return {"HERMES_TIMEZONE": "UTC", "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}

    def program(self) -> Path:
        return PROGRAM

    def configure(self, home: Path, endpoint: Endpoint) -> None:
        folder = home / ".hermes"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(
            "model:\n"
            "  provider: custom\n"
            f"  base_url: {endpoint.url}/v1\n"
            f"  default: {_quoted(endpoint.model)}\n"
            f"  context_length: {endpoint.context}\n"
        )

    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        return [str(PROGRAM), "chat", "--query", prompt, "--quiet", "--ignore-rules", "-m", endpoint.model]

    def answer(self, stdout: str) -> Answer:
        lines = stdout.splitlines()
        other = [line for line in lines if NOT_ANSWER.match(line)]
        text = "\n".join(line for line in lines if not NOT_ANSWER.match(line)).strip("\n")
        if not text.strip():
            raise RuntimeFailure("hermes printed no answer")
        return Answer(text, other)

    def refusal(self, output: str) -> str | None:
        lowered = output.lower()
        hit = "context" in lowered and ("minimum" in lowered or "too small" in lowered)
        return output.strip()[-300:] if hit else None


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
