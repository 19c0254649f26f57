"""Pi (npm `@earendil-works/pi-coding-agent`): one turn is `pi --print --no-session --no-tools
--no-context-files --offline --provider repro --model NAME PROMPT`, LAB's command line with the
offline switch and our provider. Pi injects a system prompt of its own (its working folder and
today's date among it: the clock is pinned) and prints the answer as plain text. Its provider is the
relay, declared in `~/.pi/agent/models.json`; the model is named `repro-model` there, since Pi
reads a `:` in a model pattern as a thinking level (Ollama's names hold one).

Native mode: Pi's built-in tools stay off; an extension of ours (``EXTENSION``, written into HOME
with the scenario's tools beside it) registers each tool as Pi's own, run one at a time in the
reply's order, each call posted to the harness's tool desk and its result given back to Pi as the
tool's text. Pi forms the calls, validates them, keeps the conversation and decides when it ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runtimes.base import RUNTIME_ROOT, Answer, Endpoint, RuntimeAdapter, RuntimeFailure

ENTRY = RUNTIME_ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
PROVIDER, NAME = "repro", "repro-model"
# Our extension: the scenario's tools (tools.json beside it) as Pi's own, each call sent to the desk
EXTENSION = """import { readFileSync } from "node:fs";
import { join } from "node:path";

export default function (pi: any) {
  const folder = join(process.env.HOME ?? "", ".pi", "repro");
  const offer = JSON.parse(readFileSync(join(folder, "tools.json"), "utf8"));
  for (const tool of offer.tools) {
    pi.registerTool({
      name: tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      executionMode: "sequential",
      async execute(toolCallId: string, params: unknown) {
        const response = await fetch(offer.desk, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id: toolCallId, name: tool.name, args: params }),
        });
        return { content: [{ type: "text", text: await response.text() }], details: {} };
      },
    });
  }
}
"""


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

    native = True

    def native_argv(
        self, prompt: str, endpoint: Endpoint, home: Path, tools: list[dict[str, Any]], desk: str
    ) -> list[str]:
        folder = home / ".pi" / "repro"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tools.json").write_text(json.dumps({"desk": desk, "tools": [t["function"] for t in tools]}))
        (folder / "repro-tools.ts").write_text(EXTENSION)
        flags = [
            "--print",
            "--no-session",
            "--no-builtin-tools",
            "--no-extensions",
            "-e",
            str(folder / "repro-tools.ts"),
        ]
        flags += ["--no-context-files", "--offline"]
        return [str(self.program()), str(ENTRY), *flags, "--provider", PROVIDER, "--model", NAME, prompt]

    def answer(self, stdout: str) -> Answer:
        text = stdout.strip("\n")
        if not text.strip():
            raise RuntimeFailure("pi printed no answer")
        return Answer(text)
