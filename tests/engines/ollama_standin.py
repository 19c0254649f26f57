"""A STAND-IN for the Ollama server, not Ollama: Ollama cannot be installed on this machine.

It implements the slice of Ollama's HTTP API that repro uses, with the documented contract:
  GET  /api/version                 {"version": ...}
  HEAD /api/blobs/sha256:<hex>      200 if the blob is stored, 404 if not
  POST /api/blobs/sha256:<hex>      stores the body; 400 when it does not hash to <hex>; 201
  POST /api/create                  {"model", "files": {"model.gguf": "sha256:<hex>"}, "template",
                                    "parameters", "stream": false} -> {"status": "success"}
  POST /api/show                    template, parameters, details of a created model
  POST /api/chat                    {"model", "messages", "format", "options", "stream": false}
                                    -> {"message": {...}, "done": true, eval_count, eval_duration...}
  POST /api/pull                    refused (500) and recorded: repro must never call it
It never runs a model: a chat reply is a minimal JSON value that satisfies the request's
`format` schema. Stdlib only, so it also runs inside a sealed container (the harness image) as
`python3 ollama_standin.py --port 11434`.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import threading
import time
from typing import Any

STANDIN_VERSION = "0.0.0-standin"


def example_for(schema: Any) -> Any:
    """A minimal value that satisfies a (simple) JSON schema: anyOf picks the first branch."""
    if not isinstance(schema, dict):
        return "ready"
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return example_for(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {name: example_for(props.get(name, {})) for name in schema.get("required", list(props))}
    if kind == "array":
        return [example_for(schema.get("items", {}))] if schema.get("minItems") else []
    if kind == "integer":
        return 0
    if kind == "number":
        return 0.0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "ready"


class StandIn:
    """State of one stand-in server: blobs, models, and every request it received."""

    def __init__(
        self, version: str = STANDIN_VERSION, *, tokens_per_second: float = 100.0, die_on_chat: bool = False
    ) -> None:
        self.version = version
        self.tokens_per_second = tokens_per_second
        self.die_on_chat = die_on_chat
        self.blobs: dict[str, int] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()

    def paths(self) -> list[str]:
        return [f"{method} {path}" for method, path, _ in self.requests]


def make_handler(state: StandIn):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _record(self, body: Any = None) -> None:
            with state.lock:
                state.requests.append((self.command, self.path, body))

        def _json(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw or b"null")
            except ValueError:
                return None

        def do_GET(self) -> None:
            self._record()
            if self.path == "/api/version":
                return self._send(200, {"version": state.version})
            if self.path == "/":
                return self._send(200, "Ollama is running (stand-in)")
            return self._send(404, {"error": "not found"})

        def do_HEAD(self) -> None:
            self._record()
            digest = self._blob_digest()
            if digest is None:
                return self._send(404)
            return self._send(200 if digest in state.blobs else 404)

        def _blob_digest(self) -> str | None:
            prefix = "/api/blobs/sha256:"
            if not self.path.startswith(prefix):
                return None
            return self.path[len(prefix) :]

        def do_POST(self) -> None:
            digest = self._blob_digest()
            if digest is not None:
                return self._post_blob(digest)
            body = self._json()
            self._record(body)
            if self.path == "/api/create":
                return self._create(body)
            if self.path == "/api/show":
                return self._show(body)
            if self.path == "/api/chat":
                return self._chat(body)
            if self.path == "/api/pull":
                return self._send(500, {"error": "stand-in: /api/pull is never allowed in a run"})
            return self._send(404, {"error": "not found"})

        def _post_blob(self, digest: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            hasher = hashlib.sha256()
            remaining = length
            while remaining > 0:
                block = self.rfile.read(min(remaining, 1 << 20))
                if not block:
                    break
                hasher.update(block)
                remaining -= len(block)
            self._record({"bytes": length - remaining})
            if hasher.hexdigest() != digest:
                return self._send(400, {"error": "digest mismatch"})
            state.blobs[digest] = length
            return self._send(201)

        def _create(self, body: Any) -> None:
            if not isinstance(body, dict) or not body.get("model"):
                return self._send(400, {"error": "model is required"})
            files = body.get("files") or {}
            for name, ref in files.items():
                if not isinstance(ref, str) or not ref.startswith("sha256:") or ref[7:] not in state.blobs:
                    return self._send(400, {"error": f"file {name}: blob {ref} not found"})
            if not files and not body.get("from"):
                return self._send(400, {"error": "neither 'from' nor 'files' was specified"})
            state.models[body["model"]] = {
                "files": files,
                "template": body.get("template"),
                "parameters": body.get("parameters") or {},
                "system": body.get("system"),
            }
            if body.get("stream", True):
                data = (
                    "\n".join(
                        json.dumps(line)
                        for line in ({"status": "parsing GGUF"}, {"status": "writing manifest"}, {"status": "success"})
                    )
                    + "\n"
                )
                encoded = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)
                return None
            return self._send(200, {"status": "success"})

        def _show(self, body: Any) -> None:
            name = (body or {}).get("model") if isinstance(body, dict) else None
            model = state.models.get(name or "")
            if model is None:
                return self._send(404, {"error": f"model '{name}' not found"})
            parameters = "\n".join(
                f"{key} {json.dumps(item) if isinstance(item, str) else item}"
                for key, value in sorted(model["parameters"].items())
                for item in (value if isinstance(value, list) else [value])
            )
            return self._send(
                200,
                {
                    "template": model["template"],
                    "parameters": parameters,
                    "details": {"format": "gguf", "family": "stand-in"},
                    "model_info": {"general.architecture": "stand-in"},
                    "capabilities": ["completion"],
                },
            )

        def _chat(self, body: Any) -> None:
            if not isinstance(body, dict):
                return self._send(400, {"error": "invalid JSON"})
            if body.get("model") not in state.models:
                return self._send(404, {"error": f"model '{body.get('model')}' not found, try pulling it first"})
            if state.die_on_chat:
                # the engine dies mid-request: no status line, the connection just closes
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)
                return None
            fmt = body.get("format")
            if isinstance(fmt, dict):
                content = json.dumps(example_for(fmt))
            elif fmt == "json":
                content = "{}"
            else:
                content = "ready"
            eval_count = max(1, len(content) // 4)
            eval_ns = int(eval_count / state.tokens_per_second * 1e9)
            prompt_count = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages") or [])
            time.sleep(eval_ns / 1e9)
            return self._send(
                200,
                {
                    "model": body["model"],
                    "created_at": "2026-06-01T09:00:00Z",
                    "message": {"role": "assistant", "content": content},
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": eval_ns + 1_000_000,
                    "load_duration": 100_000,
                    "prompt_eval_count": prompt_count,
                    "prompt_eval_duration": 500_000,
                    "eval_count": eval_count,
                    "eval_duration": eval_ns,
                },
            )

    return Handler


def serve(state: StandIn, host: str = "127.0.0.1", port: int = 0) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer((host, port), make_handler(state))
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="Ollama API stand-in (not Ollama)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--version", default=STANDIN_VERSION)
    args = parser.parse_args()
    server = serve(StandIn(args.version), args.host, args.port)
    print(f"ollama stand-in {args.version} on {args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
