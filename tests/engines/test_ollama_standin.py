"""Ollama contract tests against a STAND-IN server (tests/engines/ollama_standin.py), not Ollama.

Ollama cannot be installed on this machine; these tests exercise harness/clients/ollama.py, the
probe's ollama-version / ollama-load / ollama-show / gate actions and repro's Ollama container
specification over loopback, against the documented API. docs/engines.md says so too.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from harness import probe
from harness.clients.errors import EngineError
from harness.clients.ollama import OllamaClient, format_from_response_format
from harness.clients.openai_compat import ChatReply
from harness.contracts import GateProbeResult
from harness.protocols.json_schema import probe_turn, response_format, round_trip, step_schema
from repro.engines.gate import from_probe
from repro.engines.ollama import OllamaEngine, model_parameters, ollama_model_name, template_for
from repro.spec.matrix import Decoding, EngineSpec, LatencyGateSettings
from repro.spec.profiles import load_profiles
from tests.engines.ollama_standin import STANDIN_VERSION, StandIn, serve
from tests.fixtures.models import smoke_model

GGUF_BYTES = b"GGUF" + os.urandom(200_000)
GGUF_SHA = hashlib.sha256(GGUF_BYTES).hexdigest()
OLLAMA_SPEC = EngineSpec.model_validate(
    {
        "id": "ollama-pinned",
        "kind": "ollama",
        "label": "stand-in",
        "image": "ollama/ollama@sha256:" + "1" * 64,
        "version": STANDIN_VERSION,
    }
)


@pytest.fixture
def standin():
    state = StandIn()
    server = serve(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(GGUF_BYTES)
    return path


def run_probe_main(tmp_path: Path, argv: list[str]) -> tuple[int, dict]:
    out = tmp_path / f"probe-{len(list(tmp_path.glob('probe-*.json')))}.json"
    code = probe.main([*argv, "--out", str(out)])
    return code, json.loads(out.read_text())


def load(standin, tmp_path: Path, gguf: Path, *, sha: str = GGUF_SHA, name: str = "repro-tiny:abc") -> tuple[int, dict]:
    smol = smoke_model("smollm2-135m-instruct-q4_1")
    template, _ = template_for(smol)
    parameters = model_parameters(smol, Decoding())
    return run_probe_main(
        tmp_path,
        [
            "ollama-load",
            "--base-url",
            standin.url,
            "--gguf",
            str(gguf),
            "--sha256",
            sha,
            "--name",
            name,
            "--template",
            template,
            "--parameters",
            json.dumps(parameters),
        ],
    )


# ---------------------------------------------------------------- probe actions


def test_version_probe(standin, tmp_path: Path):
    code, result = run_probe_main(tmp_path, ["ollama-version", "--base-url", standin.url])
    assert code == 0 and result == {"action": "ollama-version", "ok": True, "status": 200, "version": STANDIN_VERSION}


def test_load_uploads_the_blob_then_creates_with_explicit_template_and_parameters(standin, tmp_path: Path, gguf: Path):
    code, result = load(standin, tmp_path, gguf)
    assert code == 0 and result["ok"] and result["uploaded"] is True
    assert result["blob"] == f"sha256:{GGUF_SHA}"
    assert standin.blobs == {GGUF_SHA: len(GGUF_BYTES)}
    assert standin.paths()[:3] == [
        f"HEAD /api/blobs/sha256:{GGUF_SHA}",
        f"POST /api/blobs/sha256:{GGUF_SHA}",
        "POST /api/create",
    ]
    create = next(body for method, path, body in standin.requests if path == "/api/create")
    assert create["model"] == "repro-tiny:abc"
    assert create["files"] == {"model.gguf": f"sha256:{GGUF_SHA}"}
    assert "<|im_start|>" in create["template"] and create["stream"] is False
    assert create["parameters"] == {
        "num_ctx": 4096,
        "temperature": 0.0,
        "seed": 42,
        "num_predict": 512,
        "stop": ["<|im_start|>", "<|im_end|>"],
    }
    assert result["show"]["template"] == create["template"]
    assert not any(path == "/api/pull" for _, path, _ in standin.requests)
    # a second load finds the blob (HEAD 200) and uploads nothing
    code, again = load(standin, tmp_path, gguf)
    assert code == 0 and again["uploaded"] is False
    assert [p for p in standin.paths() if p.startswith("POST /api/blobs")] == [f"POST /api/blobs/sha256:{GGUF_SHA}"]


def test_load_refuses_a_gguf_that_does_not_hash_to_the_pin(standin, tmp_path: Path, gguf: Path):
    code, result = load(standin, tmp_path, gguf, sha="f" * 64)
    assert code == 2 and not result["ok"] and GGUF_SHA in result["error"]
    assert standin.requests == [] and standin.blobs == {}


def test_standin_rejects_a_blob_under_the_wrong_digest(standin):
    import httpx

    response = httpx.post(f"{standin.url}/api/blobs/sha256:{'0' * 64}", content=b"not that")
    assert response.status_code == 400 and standin.blobs == {}


def test_probes_exit_3_when_nothing_answers(tmp_path: Path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    url = f"http://127.0.0.1:{port}"
    code, result = run_probe_main(tmp_path, ["ollama-version", "--base-url", url])
    assert code == 3 and "engine unreachable" in result["error"]
    code, result = run_probe_main(tmp_path, ["ready", "--base-url", url, "--timeout", "1", "--path", "/api/version"])
    assert code == 3 and result["ready"] is False


def test_probe_bad_input_exits_2(tmp_path: Path):
    with pytest.raises(SystemExit) as caught:
        probe.main(["gate", "--base-url", "http://127.0.0.1:9", "--out", str(tmp_path / "x.json")])  # no --model etc.
    assert caught.value.code == 2
    code, result = run_probe_main(
        tmp_path,
        [
            "ollama-load",
            "--base-url",
            "http://127.0.0.1:9",
            "--gguf",
            str(tmp_path / "absent.gguf"),
            "--sha256",
            GGUF_SHA,
            "--name",
            "x",
            "--template",
            "t",
        ],
    )
    assert code == 2 and "no GGUF" in result["error"]


def test_ready_waits_through_loading(tmp_path: Path):
    """llama.cpp answers 503 while loading: ready polls until 200."""
    import http.server

    calls = []

    class Loading(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            calls.append(self.path)
            status = 503 if len(calls) < 4 else 200
            body = b'{"status":"ok"}' if status == 200 else b'{"error":{"message":"Loading model"}}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loading)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code, result = run_probe_main(
            tmp_path,
            [
                "ready",
                "--base-url",
                f"http://127.0.0.1:{server.server_address[1]}",
                "--timeout",
                "20",
                "--interval",
                "0.05",
            ],
        )
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0 and result["ready"] is True and result["polls"] == 4 and set(calls) == {"/health"}


# ---------------------------------------------------------------- the chat client


def test_chat_client_sends_options_format_and_no_stream(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    turn = probe_turn()
    schema = step_schema(turn.agent.tools)
    with OllamaClient(standin.url, "repro-tiny:abc", num_ctx=2048) as client:
        reply = client.chat(
            [{"role": "user", "content": "hi"}],
            response_format=response_format(schema),
            max_tokens=64,
            temperature=0.0,
            seed=7,
        )
    assert isinstance(reply, ChatReply)
    body = standin.requests[-1][2]
    assert body["stream"] is False and body["format"] == schema
    assert body["options"] == {"temperature": 0.0, "num_predict": 64, "seed": 7, "num_ctx": 2048}
    assert json.loads(reply.content)["tool"] == "finish"
    assert reply.finish_reason == "stop"
    assert reply.usage["completion_tokens"] == body_eval_count(reply)
    assert reply.timings["eval_count"] == reply.usage["completion_tokens"]
    assert reply.timings["predicted_per_second"] == pytest.approx(100.0, rel=0.05)
    assert {
        "prompt_eval_count",
        "prompt_eval_duration",
        "eval_duration",
        "prompt_n",
        "predicted_n",
        "predicted_ms",
    } <= set(reply.timings)


def body_eval_count(reply: ChatReply) -> int:
    return reply.raw["eval_count"]


def test_chat_client_works_with_the_json_schema_protocol(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    with OllamaClient(standin.url, "repro-tiny:abc") as client:
        reply, step = round_trip(client, max_tokens=32, seed=1)
    assert step.tool == "finish" and reply.seconds > 0


def test_unknown_model_and_dead_engine_are_engine_errors(standin, tmp_path: Path, gguf: Path):
    with OllamaClient(standin.url, "absent:model") as client, pytest.raises(EngineError, match="HTTP 404"):
        client.chat([{"role": "user", "content": "hi"}])
    load(standin, tmp_path, gguf)
    standin.die_on_chat = True
    with (
        OllamaClient(standin.url, "repro-tiny:abc", timeout=10) as client,
        pytest.raises(EngineError, match="transport error"),
    ):
        client.chat([{"role": "user", "content": "hi"}])


def test_format_mapping():
    schema = {"type": "object"}
    assert (
        format_from_response_format({"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}) == schema
    )
    assert format_from_response_format({"type": "json_object"}) == "json"
    assert format_from_response_format(None) is None


# ---------------------------------------------------------------- the gate, Ollama side


def test_gate_probe_over_the_ollama_api(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    argv = [
        "gate",
        "--base-url",
        standin.url,
        "--api",
        "ollama",
        "--model",
        "repro-tiny:abc",
        "--attempts",
        "3",
        "--required",
        "2",
        "--warmup",
        "--max-seconds",
        "5",
        "--min-tps",
        "20",
        "--max-tokens",
        "64",
        "--num-ctx",
        "4096",
    ]
    code, result = run_probe_main(tmp_path, argv)
    assert code == 0 and result["passed"] is True and result["passed_attempts"] == 3
    chats = [body for _, path, body in standin.requests if path == "/api/chat"]
    assert len(chats) == 4  # warm-up plus three attempts
    assert all(c["options"]["num_ctx"] == 4096 and c["stream"] is False and "anyOf" in c["format"] for c in chats)
    profile = load_profiles().get("cpu")
    handle = type("H", (), {"engine_id": "ollama-pinned", "model_id": "tiny", "profile": "cpu"})()
    gate = from_probe(GateProbeResult.model_validate(result), handle, profile, LatencyGateSettings(), "json_schema")
    assert gate.passed and gate.median_tokens_per_second == pytest.approx(100.0, rel=0.05)


def test_gate_fails_when_the_engine_is_too_slow(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    standin.tokens_per_second = 10.0
    argv = [
        "gate",
        "--base-url",
        standin.url,
        "--api",
        "ollama",
        "--model",
        "repro-tiny:abc",
        "--attempts",
        "2",
        "--required",
        "2",
        "--max-seconds",
        "30",
        "--min-tps",
        "20",
    ]
    code, result = run_probe_main(tmp_path, argv)
    assert code == 0 and result["passed"] is False and "tokens/s < 20" in result["reason"]


def test_a_step_that_times_out_is_slow_not_an_engine_fault(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    standin.tokens_per_second = 1.0  # a reply takes about 15 s; the request timeout is 1 s
    argv = [
        "gate",
        "--base-url",
        standin.url,
        "--api",
        "ollama",
        "--model",
        "repro-tiny:abc",
        "--attempts",
        "1",
        "--required",
        "1",
        "--max-seconds",
        "30",
        "--min-tps",
        "1",
        "--request-timeout",
        "1",
    ]
    code, result = run_probe_main(tmp_path, argv)
    [attempt] = result["attempts"]
    assert code == 0 and result["passed"] is False
    assert (
        attempt["timed_out"] is True
        and attempt["engine_fault"] is False
        and attempt["error"].startswith("no reply: timeout after 1s")
    )


def test_gate_on_a_dead_engine_exits_3(standin, tmp_path: Path, gguf: Path):
    load(standin, tmp_path, gguf)
    standin.die_on_chat = True
    argv = [
        "gate",
        "--base-url",
        standin.url,
        "--api",
        "ollama",
        "--model",
        "repro-tiny:abc",
        "--attempts",
        "2",
        "--required",
        "1",
        "--max-seconds",
        "30",
        "--min-tps",
        "1",
        "--request-timeout",
        "10",
    ]
    code, result = run_probe_main(tmp_path, argv)
    assert code == 3 and result["passed"] is False and all(a["engine_fault"] for a in result["attempts"])


# ---------------------------------------------------------------- repro's Ollama engine specification


def test_ollama_container_spec_is_sealed_and_never_pulls(tmp_path: Path, gguf: Path):
    smol = smoke_model("smollm2-135m-instruct-q4_1")
    engine = OllamaEngine.__new__(OllamaEngine)
    engine.spec, engine.run_id, engine.group_id, engine.probe_image_id = OLLAMA_SPEC, "run-x", "group-y", None
    profile = load_profiles().get("cpu")
    launch = engine.boot_spec("sha256:" + "2" * 64, smol, gguf, profile, Decoding(), profile_name="cpu")
    kwargs = engine.container_kwargs(launch, host_cpus=2)
    assert kwargs["command"] == ["serve"] and "entrypoint" not in kwargs
    assert kwargs["network_mode"] == "none" and "ports" not in kwargs
    assert kwargs["environment"]["OLLAMA_HOST"] == "127.0.0.1:11434"
    assert kwargs["user"] == "10001:10001" and kwargs["read_only"] and kwargs["cap_drop"] == ["ALL"]
    assert kwargs["labels"] == {"repro.run": "run-x", "repro.cell": "group-y", "repro.role": "engine"}
    assert "device_requests" not in kwargs
    argv = engine.load_argv(smol, Decoding())
    assert argv[0] == "ollama-load" and "--template" in argv and "pull" not in " ".join(argv)
    assert argv[argv.index("--name") + 1] == ollama_model_name(smol) == f"repro-{smol.id}:{smol.sha256[:12]}"
    assert argv[argv.index("--gguf") + 1] == "/models/model.gguf"
