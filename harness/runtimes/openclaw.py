"""OpenClaw (npm `openclaw`): one turn is `openclaw infer model run --local --json --prompt TEXT`,
LAB's own command line. It passes the prompt as the one user message, unchanged, and prints one
JSON object whose `outputs[0].text` is the answer. Its provider is the relay, declared in
`~/.openclaw/openclaw.json` (`models.mode: replace`, so no other provider exists)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.runtimes.base import RUNTIME_ROOT, Answer, Endpoint, RuntimeAdapter, RuntimeFailure

ENTRY = RUNTIME_ROOT / "node_modules" / "openclaw" / "openclaw.mjs"
PROVIDER = "repro"


class OpenClaw(RuntimeAdapter):
    kind = "openclaw"

    def env(self) -> dict[str, str]:
        return {"OPENCLAW_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"}

    def configure(self, home: Path, endpoint: Endpoint) -> None:
        model = {
            "id": endpoint.model,
            "name": endpoint.model,
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": endpoint.context,
            "maxTokens": endpoint.max_tokens,
        }
        config = {
            "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{endpoint.model}"}}},
            "models": {
                "mode": "replace",
                "providers": {
                    PROVIDER: {
                        "baseUrl": f"{endpoint.url}/v1",
                        "apiKey": "none",
                        "api": "openai-completions",
                        "models": [model],
                    }
                },
            },
        }
        folder = home / ".openclaw"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "openclaw.json").write_text(json.dumps(config, indent=2))

    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        return [str(self.program()), str(ENTRY), "infer", "model", "run", "--local", "--json", "--prompt", prompt]

    def answer(self, stdout: str) -> Answer:
        start = stdout.find("{")
        try:
            data, end = json.JSONDecoder().raw_decode(stdout[start:]) if start >= 0 else (None, 0)
        except ValueError:
            data, end = None, 0
        if not isinstance(data, dict):
            raise RuntimeFailure("openclaw printed no JSON result")
        outputs = data.get("outputs")
        if data.get("ok") is not True or not isinstance(outputs, list) or not outputs:
            raise RuntimeFailure(f"openclaw reported no output: {json.dumps(data)[:300]}")
        text = outputs[0].get("text") if isinstance(outputs[0], dict) else None
        if not isinstance(text, str):
            raise RuntimeFailure("openclaw's output holds no text")
        other = [line for line in (stdout[:start] + stdout[start + end :]).splitlines() if line.strip()]
        return Answer(text, other)

    def refusal(self, output: str) -> str | None:
        lowered = output.lower()
        return output.strip()[-300:] if "context window" in lowered and "minimum" in lowered else None
