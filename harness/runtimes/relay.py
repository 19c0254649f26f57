"""The recording relay between an agent runtime and the engine: every byte the runtime sends and
every byte the engine answers, kept.

The runtime is configured to talk to the relay (``http://127.0.0.1:<port>``); the relay forwards
each request to the engine unchanged but for two things: where a chat completion request carries no
temperature or seed, or asks for more tokens than the profile's ``max_tokens``, the relay sets the
profile's value (``fill``); and with the prompt cache per scenario (``per_scenario``), it marks
each scenario's first chat request ``cache_prompt: false`` and its later ones ``true``, as our own
client does (llama.cpp then reuses only the scenario's own prefix). The exchange records what it
set. The reply goes back to the runtime as the engine sent it, streamed or not, and is recorded whole.

Anything else the runtime tries through its proxy settings (``HTTP_PROXY``/``HTTPS_PROXY`` point
here: an update check, telemetry) is refused with 403 and recorded as ``outside``: the runtime
reaches the engine and nothing else, and the bundle says what it tried.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MAX_BODY = 8 * 1024 * 1024  # the largest request or reply the relay carries (bytes)
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
TOKEN_FIELDS = ("max_tokens", "max_completion_tokens")
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host", "proxy-connection"})


@dataclass
class Exchange:
    """One request the runtime sent and the engine's answer, as bytes went (text, UTF-8)."""

    method: str
    path: str
    request: str
    filled: dict[str, Any] = field(default_factory=dict)  # what the relay set (field -> value, or [asked, sent])
    status: int = 0
    reply: str = ""
    seconds: float = 0.0
    outside: bool = False  # a request for another host, refused

    def to_json(self) -> dict[str, Any]:
        data = {
            "method": self.method,
            "path": self.path,
            "request": self.request,
            "status": self.status,
            "reply": self.reply,
            "seconds": round(self.seconds, 3),
        }
        if self.filled:
            data["filled"] = self.filled
        if self.outside:
            data["outside"] = True
        return data


def fill_sampling(body: dict[str, Any], fill: dict[str, Any]) -> dict[str, Any]:
    """Set the profile's sampling where a chat request lacks it (temperature, seed) or asks for more
    tokens than `fill["max_tokens"]`; return what was set (the request is changed in place)."""
    filled: dict[str, Any] = {}
    for name in ("temperature", "seed"):
        if name in fill and body.get(name) is None:
            body[name] = fill[name]
            filled[name] = fill[name]
    limit = fill.get("max_tokens")
    if limit is None:
        return filled
    asked = [name for name in TOKEN_FIELDS if name in body]
    for name in asked:
        if not isinstance(body[name], int) or body[name] > limit:
            filled[name] = [body[name], limit]
            body[name] = limit
    if not asked:
        body["max_tokens"] = limit
        filled["max_tokens"] = limit
    return filled


class Relay:
    """A threaded HTTP relay on 127.0.0.1 to `upstream` (the engine's root URL). Use as a context
    manager; `take()` returns the exchanges recorded since the last call; `begin_scenario()` starts a
    scenario (with `per_scenario`, its first chat request reads no cache)."""

    def __init__(
        self,
        upstream: str,
        fill: dict[str, Any],
        *,
        port: int = 0,
        timeout: float = 300.0,
        per_scenario: bool = False,
    ) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.fill = dict(fill)
        self.timeout = timeout
        self.per_scenario = per_scenario
        self._first = True
        self._open: set[http.client.HTTPConnection] = set()  # requests the engine has not answered yet
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Relay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def begin_scenario(self) -> None:
        self._first = True

    def connect(self) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(*self.upstream, timeout=self.timeout)
        with self._lock:
            self._open.add(connection)
        return connection

    def done(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        with self._lock:
            self._open.discard(connection)

    def abandon(self) -> None:
        """Close every request still open to the engine (its runtime is gone): llama.cpp stops
        working on a request whose client went away, so a killed turn leaves the engine free."""
        with self._lock:
            left, self._open = self._open, set()
        for connection in left:
            if connection.sock is not None:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)
            connection.close()

    def fill_chat(self, request: dict[str, Any]) -> dict[str, Any]:
        """Fill one chat request (in place): the profile's sampling, then the scenario's cache mark."""
        filled = fill_sampling(request, self.fill)
        if self.per_scenario:
            with self._lock:
                request["cache_prompt"] = filled["cache_prompt"] = not self._first
                self._first = False
        return filled

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def take(self) -> list[Exchange]:
        with self._lock:
            taken, self._exchanges = self._exchanges, []
        return taken


def _handler(relay: Relay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the reply ends when the connection closes: streams pass as they come

        def log_message(self, *args: Any) -> None:  # nothing on the harness's output
            pass

        def do_GET(self) -> None:
            self._relay()

        def do_POST(self) -> None:
            self._relay()

        def do_DELETE(self) -> None:
            self._relay()

        def do_CONNECT(self) -> None:
            self._refuse()

        def _relay(self) -> None:
            if not self.path.startswith("/"):  # an absolute URL: a request through the proxy setting
                return self._refuse()
            body = self._body()
            if body is None:
                return None
            exchange = Exchange(self.command, self.path, body.decode("utf-8", "replace"))
            body = self._filled(body, exchange)
            started = time.monotonic()
            try:
                self._forward(body, exchange)
            finally:
                exchange.seconds = time.monotonic() - started
                relay.record(exchange)
            return None

        def _body(self) -> bytes | None:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                self.send_error(413, "request too large for the relay")
                return None
            return self.rfile.read(length) if length else b""

        def _filled(self, body: bytes, exchange: Exchange) -> bytes:
            if self.command != "POST" or not self.path.split("?")[0].endswith(CHAT_PATHS):
                return body
            try:
                request = json.loads(body)
            except ValueError:
                return body
            if not isinstance(request, dict):
                return body
            exchange.filled = relay.fill_chat(request)
            return json.dumps(request).encode() if exchange.filled else body

        def _forward(self, body: bytes, exchange: Exchange) -> None:
            connection = relay.connect()
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
                answer = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                relay.done(connection)
                exchange.status, exchange.reply = 502, f"relay: the engine did not answer: {error}"
                with contextlib.suppress(OSError):
                    self.send_error(502, "the engine did not answer")
                return
            exchange.status = answer.status
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_HEADERS:
                    self.send_header(key, value)
            self.end_headers()
            exchange.reply = self._pass(answer)
            relay.done(connection)

        def _pass(self, answer: http.client.HTTPResponse) -> str:
            kept = bytearray()
            while chunk := _read(answer):
                if len(kept) < MAX_BODY:
                    kept += chunk[: MAX_BODY - len(kept)]
                try:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                except OSError:
                    break
            return kept.decode("utf-8", "replace")

        def _refuse(self) -> None:
            relay.record(Exchange(self.command, self.path, "", status=403, outside=True))
            self.send_error(403, "repro's sandbox reaches the engine only")

    return Handler


def _read(answer: http.client.HTTPResponse) -> bytes:
    """The next bytes of the engine's reply; none once it ended or its connection was closed."""
    try:
        return answer.read1(65536)
    except (OSError, http.client.HTTPException):
        return b""
