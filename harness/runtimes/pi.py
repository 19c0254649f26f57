"""Pi (npm `@earendil-works/pi-coding-agent`): one turn is `pi --print --no-session --no-tools
--no-context-files --offline --provider repro --model NAME PROMPT`, LAB's command line with the
offline switch and our provider. Pi injects a system prompt of its own (its working folder and
today's date among it: the clock is pinned) and prints the answer as plain text. Its provider is the
relay, declared in `~/.pi/agent/models.json`; the model is named `repro-model` there, since Pi
reads a `:` in a model pattern as a thinking level (Ollama's names hold one)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.runtimes.base import RUNTIME_ROOT, Answer, Endpoint, RuntimeAdapter, RuntimeFailure

ENTRY = RUNTIME_ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
PROVIDER, NAME = "repro", "repro-model"


class Pi(RuntimeAdapter):
    kind = "pi"

    def env(self) -> dict[str, str]:
        return {"PI_OFFLINE": "1", "NO_COLOR": "1"}

    def configure(self, home: Path, endpoint: Endpoint) -> None:
        model = {
            "id": endpoint.model,
            "name": NAME,
            "contextWindow": endpoint.context,
            "maxTokens": endpoint.max_tokens,
        }
        provider = {"baseUrl": f"{endpoint.url}/v1", "api": "openai-completions", "apiKey": "none", "models": [model]}
        folder = home / ".pi" / "agent"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "models.json").write_text(json.dumps({"providers": {PROVIDER: provider}}, indent=2))

    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        flags = ["--print", "--no-session", "--no-tools", "--no-context-files", "--offline"]
        return [str(self.program()), str(ENTRY), *flags, "--provider", PROVIDER, "--model", NAME, prompt]

    def answer(self, stdout: str) -> Answer:
        text = stdout.strip("\n")
        if not text.strip():
            raise RuntimeFailure("pi printed no answer")
        return Answer(text)
