"""The runtime client and its recording relay, against a canned OpenAI-compatible engine and a
stand-in runtime of our own (a short Python program that reads its HOME's configuration, asks the
relay as a runtime would, streamed or whole, and prints what a runtime prints). The real runtimes
run in tests/runtimes/test_runtimes_engine.py."""

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
from harness.runtimes.base import Answer, Endpoint, RuntimeAdapter, RuntimeFailure
from harness.runtimes.client import RuntimeClient, render_prompt, turn_figures
from harness.runtimes.relay import fill_sampling
from harness.runtimes.wire import EngineReply, chat_replies, read_reply

REACT = 'Thought: look\nAction: list_dir\nAction Input: {"path": "."}'

# The stand-in runtime: asks the URL in $HOME/config.json with the prompt, streamed or whole as told,
# tries an update check through its proxy setting, and prints the answer between a warning and a trailer.
STAND_IN = r"""
import json, os, sys, urllib.request
config = json.load(open(os.path.join(os.environ["HOME"], "config.json")))
mode = config["mode"]
if mode == "crash":
    print("stand-in: cannot go on", file=sys.stderr); sys.exit(3)
if mode == "refuse":
    print("context window 4096 is below the minimum 16000", file=sys.stderr); sys.exit(1)
if mode == "garbage":
    sys.stdout.buffer.write(b"\xff\xfe not an answer"); sys.exit(0)
try:
    urllib.request.urlopen("http://updates.example.invalid/check", timeout=5)
except Exception:
    pass
body = {"model": "m", "messages": [{"role": "user", "content": sys.argv[1]}], "stream": mode == "stream",
        "max_completion_tokens": 16384}
request = urllib.request.Request(config["url"] + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json"})
reply = urllib.request.urlopen(request, timeout=30).read().decode()
print("WARNING: a warning of the runtime's")
print(json.dumps({"answer": reply}))
"""


class StandIn(RuntimeAdapter):
    """Our stand-in runtime (not any real runtime's code)."""

    kind = "stand-in"

    def __init__(self, script: Path, mode: str) -> None:
        self.script, self.mode = script, mode

    def program(self) -> Path:
        return Path(sys.executable)

    def configure(self, home: Path, endpoint: Endpoint) -> None:
        (home / "config.json").write_text(json.dumps({"url": endpoint.url, "mode": self.mode}))

    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        return [sys.executable, str(self.script), prompt]

    def answer(self, stdout: str) -> Answer:
        lines = stdout.splitlines()
        try:
            reply = read_reply(json.loads(lines[-1])["answer"])
        except (ValueError, IndexError, KeyError) as error:
            raise RuntimeFailure(f"stand-in printed no answer: {error}") from None
        if reply is None:
            raise RuntimeFailure("stand-in printed no completion")
        return Answer(reply.content, lines[:-1])

    def refusal(self, output: str) -> str | None:
        return output.strip() if "below the minimum" in output else None


class Canned(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._send(200, b'{"data": [{"id": "m"}]}', "application/json")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Canned.bodies.append(body)
        usage = {"prompt_tokens": 11, "completion_tokens": 7}
        if body.get("stream"):
            events = [
                {"choices": [{"delta": {"content": REACT[:10]}, "finish_reason": None}]},
                {"choices": [{"delta": {"content": REACT[10:]}, "finish_reason": "stop"}], "usage": usage},
            ]
            text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            return self._send(200, text.encode(), "text/event-stream")
        whole = {"choices": [{"message": {"content": REACT}, "finish_reason": "stop"}], "usage": usage}
        return self._send(200, json.dumps(whole).encode(), "application/json")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def engine() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Canned.bodies = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def client(tmp_path: Path, engine: str, mode: str, **kwargs: Any) -> RuntimeClient:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return RuntimeClient(
        kwargs.pop("adapter", None) or StandIn(script, mode),
        OpenAIClient(engine, "m"),
        Endpoint("", "m", 4096, 384),
        fill={"temperature": 0.0, "seed": 42, "max_tokens": 384},
        clock=None,
        wire=tmp_path / "wire.jsonl",
        timeout=kwargs.pop("timeout", 30.0),
        scratch=tmp_path / "scratch",
        per_scenario=kwargs.pop("per_scenario", False),
    )


def turns(tmp_path: Path) -> list[RuntimeTurn]:
    lines = (tmp_path / "wire.jsonl").read_text().splitlines()
    return [RuntimeTurn.model_validate_json(line) for line in lines]


MESSAGES = [{"role": "system", "content": "You are a helper."}, {"role": "user", "content": "List the folder."}]


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_a_turn_is_the_runtimes_answer_and_every_byte_is_recorded(tmp_path: Path, engine: str, mode: str) -> None:
    with client(tmp_path, engine, mode) as runtime:
        runtime.begin_scenario("ask-001")
        reply = runtime.chat(MESSAGES, temperature=0.0, max_tokens=384, seed=42)
    assert reply.content == REACT
    assert reply.usage == {"prompt_tokens": 11, "completion_tokens": 7}
    # the relay set what the runtime did not send, and cut what it asked for past the profile's limit
    assert Canned.bodies[-1]["temperature"] == 0.0 and Canned.bodies[-1]["seed"] == 42
    assert Canned.bodies[-1]["max_completion_tokens"] == 384
    [turn] = turns(tmp_path)
    assert (turn.scenario, turn.turn, turn.exit, turn.answer) == ("ask-001", 1, 0, REACT)
    assert turn.prompt == render_prompt(MESSAGES) and "<prompt>" in turn.argv
    assert turn.other == ["WARNING: a warning of the runtime's"]  # kept apart, not in the answer
    outside, chat = turn.exchanges
    assert outside.outside and outside.status == 403 and "updates.example.invalid" in outside.path
    assert chat.filled == {"temperature": 0.0, "seed": 42, "max_completion_tokens": [16384, 384]}
    assert json.loads(chat.request)["max_completion_tokens"] == 16384  # as the runtime sent it
    assert [r.content for r in chat_replies([chat.model_dump()])] == [REACT]
    assert turn.home == ["config.json"]


@pytest.mark.parametrize(
    ("mode", "failure"), [("crash", "runtime_error"), ("refuse", "runtime_config"), ("garbage", "runtime_error")]
)
def test_a_runtime_that_fails_fails_the_turn_with_its_layer(
    tmp_path: Path, engine: str, mode: str, failure: str
) -> None:
    with client(tmp_path, engine, mode) as runtime, pytest.raises(RuntimeFailure) as raised:
        runtime.chat(MESSAGES)
    assert raised.value.failure == failure
    assert "\n" not in str(raised.value)[:300]
    [turn] = turns(tmp_path)  # recorded all the same
    assert turn.answer is None and turn.exit == (0 if mode == "garbage" else turn.exit) and turn.exit is not None


def test_a_runtime_that_is_missing_is_unavailable(tmp_path: Path, engine: str) -> None:
    class Missing(StandIn):
        def program(self) -> Path:
            return tmp_path / "no-such-runtime"

    with client(tmp_path, engine, "whole", adapter=Missing(tmp_path, "whole")) as runtime:
        with pytest.raises(RuntimeFailure) as raised:
            runtime.chat(MESSAGES)
    assert raised.value.failure == "runtime_unavailable"


def test_per_scenario_the_relay_marks_each_scenarios_first_request(tmp_path: Path, engine: str) -> None:
    with client(tmp_path, engine, "whole", per_scenario=True) as runtime:
        for scenario in ("a", "b"):
            runtime.begin_scenario(scenario)
            runtime.chat(MESSAGES)
            runtime.chat(MESSAGES)
    assert [body["cache_prompt"] for body in Canned.bodies] == [False, True, False, True]
    assert [t.exchanges[-1].filled["cache_prompt"] for t in turns(tmp_path)] == [False, True, False, True]


def test_the_relay_fills_only_what_is_missing() -> None:
    body: dict[str, Any] = {"temperature": 0.7, "max_tokens": 100}
    assert fill_sampling(body, {"temperature": 0.0, "seed": 1, "max_tokens": 384}) == {"seed": 1}
    assert body == {"temperature": 0.7, "max_tokens": 100, "seed": 1}
    empty: dict[str, Any] = {}
    assert fill_sampling(empty, {"max_tokens": 384}) == {"max_tokens": 384}


def test_the_prompt_is_the_conversation_in_order() -> None:
    messages = [*MESSAGES, {"role": "assistant", "content": REACT}, {"role": "user", "content": "Observation: []"}]
    prompt = render_prompt(messages)
    assert prompt.startswith("System:\nYou are a helper.\n\nUser:\nList the folder.\n\nAssistant:\nThought: look")
    assert prompt.endswith("User:\nObservation: []")


def test_a_turn_of_several_requests_records_their_sum_and_number() -> None:
    first = EngineReply(usage={"prompt_tokens": 100, "completion_tokens": 96}, timings=_timed(0, 100, 96))
    second = EngineReply(usage={"prompt_tokens": 300, "completion_tokens": 40}, timings=_timed(196, 104, 40))
    usage, timings = turn_figures([first, second])
    assert usage == {"prompt_tokens": 400, "completion_tokens": 136}
    assert timings is not None and timings["requests"] == 2 and timings["cache_n"] == 0
    assert (timings["prompt_n"], timings["predicted_n"]) == (204, 136)
    assert turn_figures([second]) == ({"prompt_tokens": 300, "completion_tokens": 40}, second.timings)


def _timed(cache_n: int, prompt_n: int, predicted_n: int) -> dict[str, Any]:
    counts = {"cache_n": cache_n, "prompt_n": prompt_n, "predicted_n": predicted_n}
    return counts | {"prompt_ms": 10.0, "predicted_ms": 20.0}


def test_an_answer_is_made_of_the_turns_last_replies() -> None:
    from repro.check.wire import made_of

    assert made_of("Thought: a\nAction: b", ["x", "Thought: a\nAction: b"])
    assert made_of("Thought: a Action: b", ["Thought: a ", "Action: b"])  # a reply continued
    assert not made_of("Thought: forged", ["Thought: a"])
