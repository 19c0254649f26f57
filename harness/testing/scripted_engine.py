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
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.agent.loop import run_agent
from harness.agent.policy import ScriptedPolicy, Step
from harness.agent.prompts import render_trigger
from harness.io.inputs import MAX_SCENARIO_BYTES, read_regular
from harness.io.strict_json import dumps_compact
from harness.model.scenario import (
    FollowUpTrigger,
    MessageTrigger,
    Scenario,
    ScenarioError,
    ScheduleTrigger,
    TaskTrigger,
    load_scenarios,
    parse_scenario,
)
from harness.model.workspace import Workspace
from harness.protocols.base import PROBE_TASK

FAULTS: dict[str, str] = {
    "text_call": "the call written as prose (native_tools: as JSON text in the content, no tool_calls)",
    "unknown_tool": "a call to a tool that does not exist (delete_everything)",
    "bad_args": "the reference call with an extra argument the schema forbids",
    "broken_json": "the reply's JSON (native_tools: the arguments) cut before its last brace",
    "empty": "an empty reply",
    "length": "the reply cut in the middle of its JSON, finish_reason length",
    "endless": "the same call forever (the first reference call that is not finish or ask)",
    "repairable": "json protocols: the step in a code fence, after a sentence, with a trailing comma",
}
FAULT_SUFFIX = "+fault="
UNKNOWN_TOOL = "delete_everything"
RESULTS_COMPARED = 4  # the latest results are sent in full by every protocol
NEXT_LINE = re.compile(r"\nNext: step \d+ of \d+\.$")
RUNNER_NOW = re.compile(r"^Now: [^\n]*\n")  # the Tholos runner's clock line before its trigger
RUNNER_TASK = re.compile(r"^Task #\d+ from ")  # its task trigger: the id is its database's
RUNNER_RESULT = re.compile(
    r"^<tool_response>\n(.*)\n</tool_response>$", re.DOTALL
)  # how the runner wraps a tool's result
MAX_RECORD_BYTES = 64 * 1024**2
MAX_BODY_BYTES = 16 * 1024**2
MAX_ARCHIVE_MEMBERS = 10_000
MAX_ARCHIVE_BYTES = 64 * 1024**2  # a scenario archive (Tholos-Bench's 160 files: about 0.6 MB)


class ScriptError(ValueError):
    """A request the scripted engine cannot answer (HTTP 400); the message is one line."""


@dataclass
class Reply:
    content: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str


# ---------------------------------------------------------------------------- the script


@dataclass
class Script:
    """One scenario: its agent, its reference steps and the result of each when replayed."""

    scenario: Scenario
    steps: list[Step]
    results: list[str]  # each step's result as compact JSON

    @classmethod
    def of(cls, scenario: Scenario) -> Script:
        policy = ScriptedPolicy(scenario.reference)
        run = run_agent(scenario, Workspace.from_spec(scenario.workspace), policy)
        steps = [Step(r.tool, dict(r.args), f"Reference step {i}.") for i, r in enumerate(scenario.reference, start=1)]
        return cls(scenario, steps, [dumps_compact(record.result) for record in run.steps])

    def refusals(self, count: int) -> list[bool]:
        """Whether each of the first ``count`` reference steps was refused when replayed."""
        return [i < len(self.results) and _is_error(self.results[i]) for i in range(count)]

    def step(self, number: int) -> Step:
        if number < len(self.steps):
            return self.steps[number]
        return Step("finish", {"summary": "No scripted steps left."}, "Done.")


class Library:
    """The scripts of a scenario folder, found by trigger text and agent."""

    def __init__(self, scenarios: Iterable[Scenario]) -> None:
        self.by_trigger: dict[str, list[Script]] = {}
        for scenario in scenarios:
            script = Script.of(scenario)
            self.by_trigger.setdefault(render_trigger(scenario.trigger), []).append(script)
            self.by_trigger.setdefault(runner_trigger(scenario.trigger), []).append(script)

    def __len__(self) -> int:
        return sum(len(scripts) for key, scripts in self.by_trigger.items() if not key.startswith(RUNNER_KEY))

    def find(self, messages: list[dict[str, Any]], taken: int) -> Script:
        system = _text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        first_user = next((_text(m) for m in messages if m.get("role") == "user"), "")
        trigger = NEXT_LINE.sub("", first_user)
        if RUNNER_NOW.match(first_user):
            trigger = RUNNER_KEY + RUNNER_TASK.sub("", RUNNER_NOW.sub("", first_user, count=1), count=1)
        scripts = [s for s in self.by_trigger.get(trigger, []) if _names_agent(system, s.scenario.agent_spec().name)]
        if not scripts and trigger == PROBE_TASK:
            return PROBE_SCRIPT
        if not scripts:
            raise ScriptError(f"no scenario has the trigger {trigger[:80]!r}")
        if RUNNER_NOW.match(first_user) and len(scripts) > 1:
            refused = runner_errors(messages)
            return max(
                scripts, key=lambda s: sum(a == b for a, b in zip(s.refusals(len(refused)), refused, strict=True))
            )
        seen = "\n".join(_text(m) for m in messages)
        recent = range(max(0, taken - RESULTS_COMPARED), taken)
        matching = [s for s in scripts if all(i < len(s.results) and s.results[i] in seen for i in recent)]
        return (matching or scripts)[0]


RUNNER_KEY = "tholos-runner\0"  # marks the runner's trigger forms among the keys


def runner_trigger(trigger: object) -> str:
    """The trigger as Tholos-Bench's runner words it, after its clock line and its task number."""
    if isinstance(trigger, TaskTrigger):
        return f"{RUNNER_KEY}{trigger.from_}: {trigger.title}\n{trigger.details}"
    if isinstance(trigger, ScheduleTrigger):
        return f"{RUNNER_KEY}Scheduled: {trigger.prompt}"
    if isinstance(trigger, FollowUpTrigger):
        return f"{RUNNER_KEY}Follow-up: {trigger.note}"
    if isinstance(trigger, MessageTrigger):
        return f"{RUNNER_KEY}Message from the owner: {trigger.text}"
    raise TypeError(f"unknown trigger {trigger!r}")


def runner_errors(messages: list[dict[str, Any]]) -> list[bool]:
    """For each step the Tholos runner's request shows, whether its tool result was an error:
    the first ``<tool_response>`` user message after each assistant message (a step that waits
    for the owner has none until it is decided; the last step may have none yet)."""
    refused: list[bool] = []
    for before, message in zip(messages, [*messages[1:], {}], strict=True):
        if before.get("role") == "assistant":
            found = RUNNER_RESULT.match(_text(message)) if message.get("role") == "user" else None
            refused.append(found is not None and _is_error(found.group(1)))
    return refused


def _is_error(result: str) -> bool:
    try:
        value = json.loads(result)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


def _names_agent(system: str, name: str) -> bool:
    """Our system message starts `You are <agent>.`, the Tholos runner's `You are <agent>, an agent`."""
    return system.startswith((f"You are {name}.", f"You are {name}, an agent"))


# The latency gate's one-step probe (harness.protocols.base.probe_turn) is answered too.
PROBE_SCRIPT = Script(scenario=None, steps=[Step("finish", {"summary": "ready"}, "Ready.")], results=[])  # type: ignore[arg-type]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


# ---------------------------------------------------------------------------- the wire formats


def protocol_of(request: dict[str, Any]) -> str:
    if request.get("tools"):
        return "native_tools"
    if (request.get("response_format") or {}).get("type") == "json_schema":
        return "json_schema"
    if any("Observation" in stop for stop in request.get("stop") or []):
        return "react"
    return "json_prompt"


def steps_taken(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def faulty_step(script: Script, number: int, fault: str | None) -> Step:
    """The step a fault starts from: the reference step, or the fault's own call."""
    step = script.step(number)
    if fault == "unknown_tool":
        return Step(UNKNOWN_TOOL, {}, step.thought)
    if fault == "bad_args":
        return Step(step.tool, {**step.args, "unexpected_argument": True}, step.thought)
    if fault == "endless":
        return next((s for s in script.steps if s.tool not in ("finish", "ask")), script.steps[0])
    return step


def render(step: Step, protocol: str, fault: str | None) -> Reply:
    """The reply of ``step`` in ``protocol``'s wire format, with ``fault`` applied."""
    if fault == "empty":
        return Reply("", [], "stop")
    if fault == "text_call":
        return _text_call(step, protocol)
    if protocol == "native_tools":
        return _native(step, fault)
    prefix, body = _text_parts(step, protocol)
    if fault == "broken_json":
        body = body[:-1]
    if fault == "length":
        return Reply(prefix + body[: len(body) // 2], [], "length")
    if fault == "repairable" and protocol in ("json_schema", "json_prompt"):
        body = f"Here is my step:\n```json\n{body[:-1]},}}\n```"
    return Reply(prefix + body, [], "stop")


def _text_parts(step: Step, protocol: str) -> tuple[str, str]:
    """(the text before the JSON, the JSON) of a text protocol's reply."""
    if protocol == "react":
        return f"Thought: {step.thought}\nAction: {step.tool}\nAction Input: ", dumps_compact(step.args)
    return "", dumps_compact({"thought": step.thought, "tool": step.tool, "args": step.args})


def _text_call(step: Step, protocol: str) -> Reply:
    if protocol == "native_tools":
        return Reply(dumps_compact({"name": step.tool, "arguments": step.args}), [], "stop")
    return Reply(f"I would call the {step.tool} tool next, with the arguments the task needs.", [], "stop")


def _native(step: Step, fault: str | None) -> Reply:
    arguments = dumps_compact(step.args)
    if fault == "broken_json":
        arguments = arguments[:-1]
    if fault == "length":
        return Reply(dumps_compact({"name": step.tool, "arguments": step.args})[:20], [], "length")
    call = {"id": "scripted_call", "type": "function", "function": {"name": step.tool, "arguments": arguments}}
    return Reply(step.thought, [call], "tool_calls")


# ---------------------------------------------------------------------------- the server


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


def scenarios_at(path: Path) -> list[Scenario]:
    """The scenarios of a ``.json`` file or a folder, or of a tar archive's ``*.json`` members
    (any other file: read within MAX_ARCHIVE_BYTES, a regular file only, and refused unless it is
    a tar archive that holds at least one scenario)."""
    if path.is_dir() or path.suffix == ".json":
        return load_scenarios(path)
    scenarios = scenarios_in_archive(path, read_regular(path, MAX_ARCHIVE_BYTES))
    if not scenarios:
        raise ScenarioError(f"{path}: no scenario (a .json file, a folder, or a tar archive of *.json members)")
    return scenarios


def scenarios_in_archive(path: Path, data: bytes) -> list[Scenario]:
    """Each regular ``*.json`` member of a tar archive as a scenario, bounded; links refused."""
    scenarios: list[Scenario] = []
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data))
    except tarfile.TarError:
        raise ScenarioError(f"{path}: not a tar archive of scenarios") from None
    with archive:
        for number, member in enumerate(archive):
            if number >= MAX_ARCHIVE_MEMBERS:
                raise ScenarioError(f"{path.name}: more than {MAX_ARCHIVE_MEMBERS} members")
            if not (member.isfile() or member.isdir()):
                raise ScenarioError(f"{path.name}: member {member.name!r} is not a regular file or folder; refused")
            if not member.isfile() or not member.name.endswith(".json"):
                continue
            if member.size > MAX_SCENARIO_BYTES:
                raise ScenarioError(f"{path.name}: member {member.name!r} is over {MAX_SCENARIO_BYTES} bytes")
            handle = archive.extractfile(member)
            text = handle.read(MAX_SCENARIO_BYTES + 1).decode("utf-8") if handle else ""
            scenarios.append(parse_scenario(Path(member.name), text))
    return sorted(scenarios, key=lambda s: (s.category, s.id))


def generated_tokens(reply: Reply) -> int:
    """The tokens a reply is counted as: about a quarter of its characters."""
    return max(1, len(reply.content + json.dumps(reply.tool_calls)) // 4)


def completion(
    model: str, reply: Reply, messages: list[dict[str, Any]], spent: tuple[float, float] = (1.0, 1.0)
) -> dict[str, Any]:
    """An OpenAI chat completion body with llama.cpp-style ``timings``: ``spent`` is (prompt ms,
    generation ms). A paced server measures both (finding the step, then the pause that paces its
    reply), so its timings are real durations within the request's and within the bounds
    ``repro check`` holds every engine to; otherwise they are nominal, 1 ms each."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    prompt_tokens = max(1, sum(len(_text(m)) for m in messages) // 4)
    completion_tokens = generated_tokens(reply)
    prompt_ms, predicted_ms = spent
    return {
        "id": "scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "timings": {
            "prompt_n": prompt_tokens,
            "prompt_ms": prompt_ms,
            "predicted_n": completion_tokens,
            "predicted_ms": predicted_ms,
            "predicted_per_second": completion_tokens * 1000.0 / predicted_ms,
        },
    }


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
