"""Fixtures for the model store tests: the test cache, SmolLM2, and a loopback file server."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class FileServer:
    """A tiny http.server on 127.0.0.1 in a thread: serves `files` by path, counts GETs."""

    files: dict[str, bytes] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    delay_per_block: float = 0.0
    gets: list[str] = field(default_factory=list)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(state: FileServer):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _head(self) -> bytes | None:
            path = self.path.split("?")[0]
            data = state.files.get(path)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Content-Type", "application/octet-stream")
            for key, value in state.headers.get(path, {}).items():
                self.send_header(key, value)
            self.end_headers()
            return data

        def do_HEAD(self) -> None:
            self._head()

        def do_GET(self) -> None:
            state.gets.append(self.path)
            data = self._head()
            if data is None:
                return
            for start in range(0, len(data), 64 * 1024):
                self.wfile.write(data[start : start + 64 * 1024])
                if state.delay_per_block:
                    time.sleep(state.delay_per_block)

    return Handler


@pytest.fixture
def file_server():
    state = FileServer()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"
