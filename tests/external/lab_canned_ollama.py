"""A canned Ollama of the repro project's own for the LAB path's tests (tests/external/test_lab*.py):
it answers LAB's `/api/version`, `/api/tags`, `/api/show` and `/api/chat` (asserting LAB's request:
`stream: false`, temperature 0 only) with fixed model replies chosen by a word of the task's prompt.
Imported by the host tests; run as a script in a container with no network for the sealed one:

    python3 lab_canned_ollama.py PORT LISBON_ANSWER
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "repro-qwen:1d9614638d18"
# What the canned Ollama answers, by a word of the task's prompt: the model's replies in order
REPLIES = {
    "absolute path": ["Action: get_cwd\nAction Input: {}", "Final Answer: The project folder is {cwd}."],
    "README": ['Action: list_directory\nAction Input: {"path": "."}', "Final Answer: README.md"],
    "codename": ["Final Answer: cobalt-heron"],
    "Berlin": ['Action: get_weather\nAction Input: {"location": "Berlin"}', "Final Answer: It is 99 degrees."],
    "Lisbon": ['Action: get_weather\nAction Input: {"location": "Lisbon"}', "Final Answer: {lisbon}"],
}


def observed_cwd(messages: list[dict[str, str]]) -> str:
    """The folder the last observation gave (the canned model repeats what get_cwd answered)."""
    seen = [m["content"] for m in messages if m["content"].startswith("Observation: ")]
    return str(json.loads(seen[-1].removeprefix("Observation: ")).get("cwd", "")) if seen else ""


class CannedOllama(BaseHTTPRequestHandler):
    lisbon = ""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            return self._send({"models": [{"name": MODEL}]})
        return self._send({"version": "0.11.4"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/api/show":
            return self._send({"template": "{{ .Prompt }}"})
        assert body["options"] == {"temperature": 0} and body["stream"] is False  # LAB's request, as LAB sends it
        prompt = body["messages"][1]["content"]
        replies = next(r for word, r in REPLIES.items() if word in prompt)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        reply = replies[min(turn, len(replies) - 1)].replace("{lisbon}", CannedOllama.lisbon)
        reply = reply.replace("{cwd}", observed_cwd(body["messages"]))
        return self._send({"message": {"role": "assistant", "content": reply}, "done": True})

    def _send(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def lisbon_answer(fixtures: Path) -> str:
    """The answer that passes the Lisbon task: the fixture world's current temperature there."""
    world = json.loads((fixtures / "weather" / "june-2026.json").read_text())
    lisbon = next(c for c in world["cities"] if c["name"] == "Lisbon")
    return f"It is {lisbon['forecast']['current']['temperature_2m']} degrees."


if __name__ == "__main__":
    CannedOllama.lisbon = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), CannedOllama)
    print("canned ollama: serving", flush=True)
    server.serve_forever()
