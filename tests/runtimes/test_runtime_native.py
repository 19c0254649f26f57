"""Native mode (harness.runtimes.native) against a canned engine and a stand-in native runtime of our
own (a short Python program, not any real runtime's code: it asks the relay with the tools it was
offered, posts each call of a reply to the harness's tool desk, feeds the results back, and prints
its answer once a reply holds no call). The real Pi plays native mode in
tests/runtimes/test_runtimes_engine.py; here: the protocol reads each reply from the wire, a
reply's later calls are not run, the run is stopped when the loop ends, a text ending is the
protocol's no-call, a crash fails in the runtime layer, and repro's check reads the wire back."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.clients.openai_compat import OpenAIClient
from harness.contracts import RuntimeTurn
from harness.protocols import make_policy
from harness.regrade import Replay, load_scenarios, regrade
from harness.runner import run_scenario
from harness.runtimes.base import Answer, Endpoint, RuntimeFailure
from harness.runtimes.native import NOT_RUN, STOPPED, NativeRuntimeClient, policy_retries
from repro.check.wire import calls_problems, turn_requests, wire_answers
from tests.runtimes.test_runtime_client import StandIn

ROOT = Path(__file__).resolve().parents[2]

# The stand-in native runtime: a conversation of its own with the relay, its tools' calls sent to the desk.
STAND_IN = r"""
import json, os, sys, urllib.request
config = json.load(open(os.path.join(os.environ["HOME"], "config.json")))
if config["mode"] == "crash":
    print("stand-in: cannot go on", file=sys.stderr); sys.exit(3)
def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    return urllib.request.urlopen(request, timeout=60).read().decode()
messages = [{"role": "system", "content": "stand-in system prompt"}, {"role": "user", "content": sys.argv[1]}]
for _ in range(6):
    reply = json.loads(post(config["url"] + "/v1/chat/completions",
                            {"model": "m", "messages": messages, "tools": config["tools"]}))
    message = reply["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
    if not calls:
        print(json.dumps({"answer": message.get("content") or ""}))
        sys.exit(0)
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        result = post(config["desk"], {"id": call["id"], "name": call["function"]["name"], "args": args})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
print("stand-in: too many rounds", file=sys.stderr); sys.exit(4)
"""


class NativeStandIn(StandIn):
    """Our stand-in native runtime (not any real runtime's code): the react stand-in's configuration,
    with the tools and the desk added to it."""

    native = True

    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        raise AssertionError("native mode only")

    def native_argv(
        self, prompt: str, endpoint: Endpoint, home: Path, tools: list[dict[str, Any]], desk: str
    ) -> list[str]:
        config = json.loads((home / "config.json").read_text()) | {"tools": tools, "desk": desk}
        (home / "config.json").write_text(json.dumps(config))
        return [sys.executable, str(self.script), prompt]

    def answer(self, stdout: str) -> Answer:
        try:
            return Answer(json.loads(stdout.splitlines()[-1])["answer"])
        except (ValueError, IndexError, KeyError) as error:
            raise RuntimeFailure(f"stand-in printed no answer: {error}") from None


def call(identifier: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": identifier, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# What the canned engine answers, request by request: two calls (the second is not run), then finish
TWO_CALLS = [call("c1", "web_search", {"query": "minutes in 3h45"}), call("c2", "get_weather", {"city": "Paris"})]
FINISH = [call("c3", "finish", {"summary": "225 minutes."})]


class Canned(BaseHTTPRequestHandler):
    script: list[dict[str, Any]] = []
    bodies: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(b'{"data": [{"id": "m"}]}')

    def do_POST(self) -> None:
        Canned.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        message = Canned.script.pop(0) if Canned.script else {"content": "no more"}
        usage = {"prompt_tokens": 20, "completion_tokens": 5}
        reply = {"choices": [{"message": message, "finish_reason": "tool_calls"}], "usage": usage}
        self._send(json.dumps(reply).encode())

    def _send(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def engine() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Canned.bodies = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def native_client(tmp_path: Path, engine: str, mode: str = "ok") -> NativeRuntimeClient:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return NativeRuntimeClient(
        NativeStandIn(script, mode),
        OpenAIClient(engine, "m"),
        Endpoint("", "m", 4096, 384),
        fill={"temperature": 0.0, "seed": 42, "max_tokens": 384},
        clock=None,
        wire=tmp_path / "wire.jsonl",
        timeout=30.0,
        scratch=tmp_path / "scratch",
    )


def play(tmp_path: Path, engine: str, script: list[dict[str, Any]], mode: str = "ok") -> tuple[Any, list[RuntimeTurn]]:
    Canned.script = script
    [scenario] = [s for s in load_scenarios(ROOT / "scenarios") if s.id == "ladder-0-001"]
    with native_client(tmp_path, engine, mode) as client:
        client.begin_scenario(scenario.id)
        policy = make_policy("native_tools", client, max_tokens=384, retries=policy_retries("native_tools", "x"))
        result = run_scenario(scenario, policy)
    turns = [RuntimeTurn.model_validate_json(line) for line in (tmp_path / "wire.jsonl").read_text().splitlines()]
    return result, turns


def test_each_call_the_runtime_runs_is_a_step_read_from_the_wire(tmp_path: Path, engine: str) -> None:
    result, [turn] = play(
        tmp_path, engine, [{"content": "", "tool_calls": TWO_CALLS}, {"content": "", "tool_calls": FINISH}]
    )
    steps = [e for e in result.transcript if e.kind == "step"]
    assert [(s.tool, s.args) for s in steps] == [
        ("web_search", {"query": "minutes in 3h45"}),
        ("finish", {"summary": "225 minutes."}),
    ]
    assert result.status == "done" and result.failure_type == "wrong_outcome", result  # two steps, one allowed
    # the reply's second call was not run; the stand-in got NOT_RUN for it, and the loop's result for the first
    assert [(c.name, c.reply, c.result) for c in turn.calls][1] == ("get_weather", None, NOT_RUN)
    assert turn.calls[0].reply == 0 and turn.calls[0].result.startswith("(ok) ")
    assert turn.calls[2].name == "finish" and turn.calls[2].reply == 1 and turn.exit == "stopped"
    second = Canned.bodies[1]["messages"]
    assert [m["content"] for m in second if m["role"] == "tool"] == [turn.calls[0].result, NOT_RUN]
    assert Canned.bodies[0]["tools"][0]["function"]["name"] == "get_weather"  # the agent's tools, offered
    # the check reads the same replies back from the wire, each holding the call the runtime ran
    replies = [r.content for e in result.transcript for r in getattr(e, "replies", None) or []]
    assert wire_answers(turn) == replies and calls_problems(turn) == []
    assert turn_requests(turn) == [1, 1]


def test_the_regrade_replays_a_native_runtime_transcript_without_a_re_prompt(tmp_path: Path, engine: str) -> None:
    result, _turns = play(tmp_path, engine, [{"content": "225"}])
    assert result.failure_type is not None and result.invalid_steps == 1  # a text ending: no call, no re-prompt
    [scenario] = [s for s in load_scenarios(ROOT / "scenarios") if s.id == "ladder-0-001"]
    ours = regrade(scenario, result, replay=Replay(protocol="native_tools", max_tokens=384, retries=0))
    assert ours.differences == [], ours
    theirs = regrade(scenario, result, replay=Replay(protocol="native_tools", max_tokens=384, retries=1))
    assert theirs.differences  # read as our own client's run, the transcript lacks the re-prompt's reply


def test_a_text_ending_is_the_protocols_no_call(tmp_path: Path, engine: str) -> None:
    result, [turn] = play(tmp_path, engine, [{"content": "225"}])
    assert result.status == "failed" and result.error and "no tool call" in result.error
    assert turn.exit == 0 and turn.answer == "225" and turn.calls == []
    assert wire_answers(turn) == ["225"]


def test_a_crash_fails_the_scenario_in_the_runtime_layer(tmp_path: Path, engine: str) -> None:
    result, [turn] = play(tmp_path, engine, [], mode="crash")
    assert result.failure_type == "runtime_error" and not result.engine_fault
    assert turn.exit == 3 and "cannot go on" in turn.stderr


def test_a_forged_call_on_the_wire_is_named(tmp_path: Path, engine: str) -> None:
    _result, [turn] = play(
        tmp_path, engine, [{"content": "", "tool_calls": TWO_CALLS}, {"content": "", "tool_calls": FINISH}]
    )
    forged = turn.model_copy(update={"calls": [turn.calls[0].model_copy(update={"id": "c9"}), turn.calls[2]]})
    assert any("c9" in p for p in calls_problems(forged))


def test_the_desk_answers_a_stopped_run(tmp_path: Path, engine: str) -> None:
    """A finish leaves the runtime waiting on its call: the client stops it and says so."""
    _result, [turn] = play(tmp_path, engine, [{"content": "", "tool_calls": FINISH}])
    assert turn.exit == "stopped" and turn.calls[-1].result is None
    assert STOPPED.startswith("(stopped)")
