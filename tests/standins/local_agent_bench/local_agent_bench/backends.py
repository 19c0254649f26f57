"""The stand-in's turn producers (not LAB's code): its own Ollama client for `raw-ollama-react`, or
an agent runtime's command line for the CLI runtimes, with the command and flags LAB's public files
give each one (`openclaw infer model run --json --local --model M --prompt P`, `hermes chat --query P
--quiet --model M --toolsets safe --max-turns 1 --ignore-rules --source local-agent-bench`, `pi
--print --no-session --no-tools --no-context-files --no-skills --no-prompt-templates --no-extensions
--offline --mode text --model M P`), the program from `LOCAL_AGENT_BENCH_OPENCLAW_BIN`,
`LOCAL_AGENT_BENCH_HERMES_BIN` or `LOCAL_AGENT_BENCH_PI_COMMAND`. The conversation goes to the
runtime as one prompt of the stand-in's own wording."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from typing import Any

from local_agent_bench.ollama import Ollama, OllamaError

RAW = "raw-ollama-react"
TIMEOUT = 600


class BackendError(OllamaError):
    """A runtime that failed a turn (its reason: RUNTIME_UNAVAILABLE, RUNTIME_ERROR when it exited
    non-zero, TIMEOUT)."""


class OllamaBackend:
    def __init__(self, base_url: str) -> None:
        self.ollama = Ollama(base_url)

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        return self.ollama.chat(model, messages)


class CliBackend:
    """One runtime turn per reply: the runtime's command line, the conversation as its prompt."""

    def __init__(self, runtime: str) -> None:
        self.runtime = runtime
        self.program = command(runtime)

    def argv(self, model: str, prompt: str) -> list[str]:
        if self.runtime == "openclaw-react":
            return [*self.program, "infer", "model", "run", "--json", "--local", "--model", model, "--prompt", prompt]
        if self.runtime == "hermes-react":
            flags = ["--quiet", "--model", model, "--toolsets", "safe", "--max-turns", "1", "--ignore-rules"]
            return [*self.program, "chat", "--query", prompt, *flags, "--source", "local-agent-bench"]
        offs = ["--no-session", "--no-tools", "--no-context-files", "--no-skills", "--no-prompt-templates"]
        return [
            *self.program,
            "--print",
            *offs,
            "--no-extensions",
            "--offline",
            "--mode",
            "text",
            "--model",
            model,
            prompt,
        ]

    def chat(self, model: str, messages: list[dict[str, str]]) -> str:
        try:
            done = subprocess.run(
                self.argv(model, prompt_of(messages)), capture_output=True, text=True, timeout=TIMEOUT
            )
        except FileNotFoundError as error:
            raise BackendError(str(error), "RUNTIME_UNAVAILABLE") from error
        except subprocess.TimeoutExpired as error:
            raise BackendError(f"{self.runtime} took over {TIMEOUT} s", "TIMEOUT") from error
        if done.returncode != 0:
            raise BackendError(
                f"{self.runtime} exited {done.returncode}: {done.stderr.strip()[-300:]}", "RUNTIME_ERROR"
            )
        return reply_text(done.stdout) if self.runtime == "openclaw-react" else done.stdout.strip()


def command(runtime: str) -> list[str]:
    """The runtime's program, as the environment names it (else its usual command name)."""
    if runtime == "pi-react":
        return shlex.split(os.environ.get("LOCAL_AGENT_BENCH_PI_COMMAND", "pi")) or ["pi"]
    name = runtime.removesuffix("-react")
    return [os.environ.get(f"LOCAL_AGENT_BENCH_{name.upper()}_BIN", name)]


def prompt_of(messages: list[dict[str, str]]) -> str:
    turns = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
    return f"Continue this conversation with the assistant's next message only.\n\n{turns}\n\n[assistant]\n"


def reply_text(stdout: str) -> str:
    """OpenClaw's JSON result: the first output's text (else what it printed)."""
    start = stdout.find("{")
    try:
        data: Any = json.JSONDecoder().raw_decode(stdout[start:])[0] if start >= 0 else None
    except ValueError:
        data = None
    outputs = data.get("outputs") if isinstance(data, dict) else None
    if isinstance(outputs, list) and outputs and isinstance(outputs[0], dict):
        return str(outputs[0].get("text", "")).strip()
    return stdout.strip()


def backend(runtime: str, base_url: str) -> OllamaBackend | CliBackend:
    return OllamaBackend(base_url) if runtime == RAW else CliBackend(runtime)
