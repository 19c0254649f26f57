"""A scripted engine: an OpenAI-compatible server that plays scenarios' reference steps.

``python -m harness scripted-engine --scenarios DIR --port P [--fault F]`` serves
``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health`` and ``GET /props`` (stdlib
``http.server``); ``ScriptedEngine`` runs the same server in a thread, for tests. It stands in for
a model so that the pipeline can be tested, and shown to work, without one.

How a request is answered:

- **Protocol**, from the request: ``tools`` present: native_tools (the step as
  ``message.tool_calls``); ``response_format`` of type json_schema: json_schema (the step as JSON
  content); ``stop`` holding ``Observation:``: react (Thought / Action / Action Input text);
  anything else: json_prompt (the step as JSON content).
- **Scenario**, from the prompt: the first user message is the scenario's trigger text (as
  ``harness.agent.prompts.render_trigger`` writes it) and the system message starts with
  ``You are <agent>.``. Scenarios that share both (the same task with a different scripted owner
  answer) are told apart by their tool results: each candidate's reference is replayed once at
  load time, and the candidate whose latest results appear in the request's messages is played.
  The latency gate's probe task (``PROBE_TASK``) is answered with ``finish {"summary": "ready"}``.
  The prompt layout of Tholos-Bench's own runner (``tholos bench``) is recognised too, so that
  runner and ours can be compared against one server: its system message starts with
  ``You are <agent>, an agent`` and its first user message is ``Now: <time>, <weekday>`` then
  ``Task #<n> from <sender>: <title>``, ``Scheduled: ``, ``Follow-up: `` or ``Message from the
  owner: `` (``runner_trigger``).
  The runner's tool results are its own (not ours), so its requests are told apart among such
  scenarios by which of the steps taken so far were refused (``runner_errors``: its
  ``<tool_response>`` carries an ``error`` key) against which were refused when the reference
  was replayed (an owner who denies an approval refuses the step in both harnesses): the
  scenario that agrees on most steps is played, the first in id order on a tie.
- **Step**: the number of assistant messages in the request is the number of steps taken; the
  next reference step is played (``finish`` once the reference is used up).
- **Scenarios from an archive**: ``--scenarios`` may name a tar archive (the scenario archive a
  suite pins by sha256, which the ``scripted`` engine kind is served as its model file): its
  regular ``*.json`` members are the scenarios (at most ``MAX_ARCHIVE_MEMBERS`` members, each at
  most ``MAX_SCENARIO_BYTES``; a link or device member is refused).
- **Recording**: with ``record`` (``--record FILE``), each request body is appended to FILE as
  one JSON line ``{"body": <the body's text>}``, byte for byte, up to ``MAX_RECORD_BYTES`` in all
  (a request past that is refused: a test never reads a record cut short).
- **Timings**: nominal (1 ms each), unless ``pace`` (``--pace TOKENS_PER_SECOND``, which the
  ``scripted`` engine kind sets to 1000): then each reply is held back as
  long as generating its tokens (a quarter of its characters) at that rate would take, and its
  ``timings`` report the real durations (finding the step; the pause), so they stay within the
  request's own time and within the bounds ``repro check`` holds every engine to.
- **Faults**, for every reply: the server's ``--fault``, or a model name ending in
  ``+fault=<name>`` (``scripted+fault=empty``), which wins. ``FAULTS`` names them.

The scripted engine in three modules: ``harness.testing.scripts`` (which scenario and step a
request is for; scenarios from a folder or an archive), ``harness.testing.replies`` (the step in
each protocol's wire format, the faults, the completion body) and this one (the server).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.model.scenario import Scenario
from harness.testing.replies import FAULTS, completion, faulty_step, generated_tokens, protocol_of, render, steps_taken
from harness.testing.scripts import Library, ScriptError, scenarios_at

FAULT_SUFFIX = "+fault="
MAX_RECORD_BYTES = 64 * 1024**2
MAX_BODY_BYTES = 16 * 1024**2


class ScriptedEngine:
    """The scripted engine over ``scenarios`` (a folder, a file or Scenario objects).

    ``with ScriptedEngine("scenarios/") as engine: ... engine.base_url ...`` serves on a free
    port in a background thread; ``serve_forever()`` serves in the calling thread."""

    def __init__(
        self,
        scenarios: str | Path | Iterable[Scenario],
        *,
        fault: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        record: Path | None = None,
        pace: float | None = None,
    ) -> None:
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (faults: {', '.join(FAULTS)})")
        loaded = scenarios_at(Path(scenarios)) if isinstance(scenarios, (str, Path)) else list(scenarios)
        self.library = Library(loaded)
        self.fault = fault
        self.pace = pace  # tokens per second a reply is paced at (None: at once, nominal timings)
        self.recorder = Recorder(record) if record is not None else None
        self.server = ThreadingHTTPServer((host, port), _handler(self.answer, self.recorder))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedEngine:
        self._thread = threading.Thread(target=self.server.serve_forever, name="scripted-engine", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()

    def serve_forever(self) -> None:
        self.server.serve_forever()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for one request body; ScriptError when it cannot be answered."""
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ScriptError("the request has no messages")
        started = time.monotonic()
        model = str(request.get("model") or "scripted")
        fault = self._fault(model)
        protocol = protocol_of(request)
        taken = steps_taken(messages)
        script = self.library.find(messages, taken)
        reply = render(faulty_step(script, taken, fault), protocol, fault)
        if self.pace is None:
            return completion(model, reply, messages)
        read = time.monotonic()
        time.sleep(generated_tokens(reply) / self.pace)
        return completion(model, reply, messages, ((read - started) * 1000.0, (time.monotonic() - read) * 1000.0))

    def _fault(self, model: str) -> str | None:
        if FAULT_SUFFIX not in model:
            return self.fault
        fault = model.rsplit(FAULT_SUFFIX, 1)[1]
        if fault not in FAULTS:
            raise ScriptError(f"unknown fault {fault!r} in the model name (faults: {', '.join(FAULTS)})")
        return fault


PROPS = {
    "build_info": "scripted-engine",
    "model_path": "scripted",
    "n_ctx": 4096,
    "total_slots": 1,
    "chat_template": "scripted",
    "default_generation_settings": {"n_ctx": 4096, "params": {"temperature": 0.0}},
}


class Recorder:
    """Request bodies appended to a file, one JSON line each, in the order they came."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0
        self.lock = threading.Lock()
        path.write_bytes(b"")

    def add(self, body: bytes) -> None:
        line = (json.dumps({"body": body.decode("utf-8", errors="replace")}, ensure_ascii=True) + "\n").encode()
        with self.lock:
            if self.written + len(line) > MAX_RECORD_BYTES:
                raise ScriptError(f"the request record is full ({MAX_RECORD_BYTES} bytes)")
            with self.path.open("ab") as handle:
                handle.write(line)
            self.written += len(line)


def _handler(
    answer: Callable[[dict[str, Any]], dict[str, Any]], recorder: Recorder | None = None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            routes: dict[str, dict[str, Any]] = {
                "/health": {"status": "ok"},
                "/props": PROPS,
                "/v1/models": {"object": "list", "data": [{"id": "scripted", "object": "model"}]},
            }
            if self.path in routes:
                self._send(200, routes[self.path])
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY_BYTES:
                    raise ScriptError(f"a request body of {length} bytes")
                body = self.rfile.read(length)
                if recorder is not None:
                    recorder.add(body)
                request = json.loads(body or b"{}")
                self._send(200, answer(request))
            except (ScriptError, ValueError) as exc:
                self._send(400, {"error": {"message": f"scripted engine: {exc}"}})

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: stdout is for progress
            return

    return Handler


def serve_command(
    scenarios: Path, host: str, port: int, fault: str | None, record: Path | None = None, pace: float | None = None
) -> int:
    """``python -m harness scripted-engine``: serve until interrupted."""
    engine = ScriptedEngine(scenarios, fault=fault, host=host, port=port, record=record, pace=pace)
    print(
        f"scripted engine: {len(engine.library)} scenarios on {engine.base_url}"
        + (f", fault {fault}" if fault else ""),
        flush=True,
    )
    try:
        engine.serve_forever()
    finally:
        engine.server.server_close()
    return 0
