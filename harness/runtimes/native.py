"""LAB's native mode: the runtime's own tool calling, the scenario's tools run by the harness.

The protocol is ``native_tools`` and its rules hold (harness.protocols.native_tools); what changes
is who talks to the engine. At a scenario's first turn the runtime starts once, with the
protocol's opening messages as its prompt and the agent's tools offered as its own (its adapter's
``native_argv``). From then on the runtime keeps the conversation: it sends the engine its own
requests (its system prompt, its history, the tools in its own shape), reads the calls, validates
them and, for each call it runs, posts it to the **tool desk**, a loopback endpoint of the harness.

Each call the desk receives is a turn of the run loop: the client returns the engine's reply that
holds the call, **read from the recorded wire** (its text and every call in it, arguments as the
engine wrote them), and the protocol parses that reply as it parses an engine's own. The step runs
in the scenario's workspace; its result (the protocol's ``tool`` message) goes back to the runtime
as the tool's output. As the protocol runs only a reply's first call, a later call of the same
reply is answered ``NOT_RUN`` without a turn. A runtime that ends with a text answer gives a reply
with no call (the protocol's ``no_call``); one that exits non-zero, or neither calls a tool nor ends
within the turn timeout, fails the scenario in the runtime layer. When the run loop stops (finish,
the step limit, an invalid reply) the runtime is stopped and its one line of the wire is written:
the process, every exchange with the engine, and each call the desk took with the result it gave.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from harness.clients.openai_compat import ChatReply
from harness.protocols.native_tools import PROTOCOL
from harness.runtimes.base import RuntimeFailure
from harness.runtimes.client import TURN_TIMEOUTS, RuntimeClient, render_prompt, stop, turn_figures
from harness.runtimes.wire import EngineReply, calls_of, chat_replies

NOT_RUN = "(not_run) one tool call per reply: only the reply's first call runs"
STOPPED = "(stopped) the harness ended the run"
MAX_CALL = 1024 * 1024  # bytes of one call posted to the desk
POLL = 0.1  # seconds between looks at the runtime's process


@dataclass
class DeskCall:
    """One tool call the runtime posted: its call id, the tool, the arguments as it parsed them, and
    the slot its result goes into."""

    id: str
    name: str
    args: Any
    result: queue.Queue[str] = field(default_factory=lambda: queue.Queue(maxsize=1))


class ToolDesk:
    """A threaded HTTP endpoint on 127.0.0.1: `POST /call` with ``{"id", "name", "args"}`` waits
    until the harness answers it (``answer``), and replies with that text."""

    def __init__(self) -> None:
        self.calls: queue.Queue[DeskCall] = queue.Queue()
        self.waiting: DeskCall | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/call"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def next(self, timeout: float) -> DeskCall | None:
        try:
            self.waiting = self.calls.get(timeout=timeout)
        except queue.Empty:
            return None
        return self.waiting

    def answer(self, text: str) -> None:
        if self.waiting is not None:
            self.waiting.result.put(text)
            self.waiting = None

    def release(self) -> None:
        """Answer every call still waiting (the run ended)."""
        self.answer(STOPPED)
        while not self.calls.empty():
            self.calls.get_nowait().result.put(STOPPED)


def _handler(desk: ToolDesk) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length)) if 0 < length <= MAX_CALL else None
            except ValueError:
                body = None
            if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                self.send_error(400, "a call is one JSON object with a name")
                return
            call = DeskCall(str(body.get("id") or ""), body["name"], body.get("args"))
            desk.calls.put(call)
            text = call.result.get().encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("content-length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

    return Handler


def policy_retries(protocol: str, runtime: str | None) -> int:
    """The re-prompts after an invalid reply a cell's policy gets: ChatPolicy's one, and none in
    native mode through a runtime (it keeps its own conversation: nothing re-prompts it from outside)."""
    return 0 if runtime is not None and protocol == PROTOCOL else 1


class NativeRuntimeClient(RuntimeClient):
    """A chat client for the ``native_tools`` protocol whose replies the runtime's own run makes
    (see the module's docstring). One runtime process per scenario (``policy_retries``: 0)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.desk = ToolDesk()
        self._process: subprocess.Popen[bytes] | None = None
        self._record: dict[str, Any] = {}
        self._home = self.scratch / "home"
        self._used = 0  # the wire's replies already given to the protocol
        self._began = 0.0

    def __enter__(self) -> Self:
        super().__enter__()
        self.desk.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end()
        self.desk.__exit__()
        super().__exit__(*exc)

    def begin_scenario(self, scenario_id: str = "") -> None:
        self._end()
        super().begin_scenario(scenario_id)

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **_: Any) -> ChatReply:
        """The engine's next reply holding a call the runtime runs, or its closing answer."""
        started = time.monotonic()
        if self._process is None:
            self._start(messages, tools or [])
        else:
            self._give(messages)
        try:
            return self._next(started)
        except RuntimeFailure:
            self._end()
            raise

    def _start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.turn += 1
        prompt = render_prompt(messages)
        self._record = {"scenario": self.scenario, "turn": self.turn, "runtime": self.adapter.kind, "calls": []}
        self._began, self._used = time.monotonic(), 0
        argv, self._home, work = self._begin(prompt, self._record, (tools, self.desk.url))
        self._process = self._spawn(argv, self._home, work)

    def _give(self, messages: list[dict[str, Any]]) -> None:
        """The result of the step the waiting call asked for: the protocol's last tool message."""
        result = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "tool"), STOPPED)
        self._record["calls"][-1]["result"] = result
        self.desk.answer(result)

    def _next(self, started: float) -> ChatReply:
        deadline = time.monotonic() + self.timeout * TURN_TIMEOUTS
        assert self._process is not None
        while True:
            call = self.desk.next(POLL)
            if call is not None:
                self._record["calls"].append({"id": call.id, "name": call.name, "args": call.args})
                reply = self._reply_for(call)
                if reply is not None:
                    self._record["calls"][-1]["reply"] = self._used - 1
                    return _chat_reply(reply, time.monotonic() - started)
                self._record["calls"][-1]["result"] = NOT_RUN
                self.desk.answer(NOT_RUN)
            elif self._process.poll() is not None:
                return self._closing(started)
            elif time.monotonic() > deadline:
                self._record["exit"] = "timeout"
                raise RuntimeFailure(
                    f"{self.adapter.kind} neither called a tool nor answered within {self.timeout * TURN_TIMEOUTS:g}s"
                )

    def _reply_for(self, call: DeskCall) -> list[EngineReply] | None:
        """The wire's replies up to the one holding `call` (by the engine's call id; without one, the
        latest reply with calls), if not given to the protocol yet; None: a later call of a reply
        already given (not run)."""
        self._record["exchanges"] += [e.to_json() for e in self.relay.take()]
        replies = chat_replies(self._record["exchanges"])
        holding = [i for i, r in enumerate(replies) if call.id and call.id in {c.get("id") for c in r.tool_calls}]
        holding = holding or [i for i, r in enumerate(replies) if r.tool_calls][-1:]
        if not holding or holding[0] < self._used:
            return None
        given, self._used = replies[self._used : holding[0] + 1], holding[0] + 1
        return given

    def _closing(self, started: float) -> ChatReply:
        """The runtime ended its run: its answer, a reply with no call."""
        assert self._process is not None
        code = self._process.wait()
        self._process = None
        try:
            self._settle(self._home, self._record)
            answer = self._answer(code, *self._outputs(), self._record)
        finally:
            self._write_run()
        replies = chat_replies(self._record["exchanges"])[self._used :]
        return _chat_reply(replies, time.monotonic() - started, answer.text)

    def _end(self) -> None:
        """Stop the scenario's runtime (the run loop ended) and write its line of the wire."""
        if self._process is None:
            return
        self.desk.release()
        stop(self._process)
        self._process = None
        self._record.setdefault("exit", "stopped")
        self._settle(self._home, self._record)
        self._record["stderr"] = self._outputs()[1][-4000:]
        self._write_run()

    def _write_run(self) -> None:
        self._record["seconds"] = round(time.monotonic() - self._began, 3)
        self._write(self._record)


def _chat_reply(replies: list[EngineReply], seconds: float, answer: str | None = None) -> ChatReply:
    """The last of `replies` as the protocol reads an engine's reply (its text, its calls), with the
    figures of them all (the runtime's own retries included); `answer`: the runtime's closing text."""
    usage, timings = turn_figures(replies)
    last = replies[-1] if replies else EngineReply()
    calls = [] if answer is not None else calls_of(last)
    content = answer if answer is not None else last.content
    return ChatReply(
        content=content,
        usage=usage,
        timings=timings,
        seconds=seconds,
        finish_reason=last.finish_reason,
        tool_calls=calls,
    )
