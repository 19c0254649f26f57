"""The real runtimes end to end: OpenClaw, Pi and Hermes, their images built in the test session from
their pinned locks (npm and PyPI), each playing a ladder scenario in react mode against the real
llama.cpp and SmolLM2, and Pi in native mode too (the scenario's tools offered as its own, through
our extension and the harness's tool desk), through `repro matrix run`; the bundle checks VALID,
its wire holds every exchange, and `repro results runtimes` shows what each runtime injected.

SmolLM2 at a 64K context: Hermes refuses a model whose context is below 64,000 tokens, and Pi keeps
4,096 tokens free; the prompts stay within a few thousand tokens (SmolLM2 is the smallest real model,
so the 13,000-token prompt Hermes sends is read fastest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.contracts import RuntimeTurn
from repro.spec.loading import load_matrix
from tests.e2e.conftest import make_snapshot, run_repro, smoke_parts

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.runtimes]
ROOT = Path(__file__).resolve().parents[2]


def runtimes_matrix() -> str:
    models, engines = smoke_parts()
    smoke = yaml.safe_load((ROOT / "matrix" / "runtimes-smoke.yaml").read_text())
    runtimes = [r for r in smoke["runtimes"] if r["kind"] != "raw"]
    return f"""\
name: runtimes-e2e
description: SmolLM2 on llama.cpp b11434 (CPU) through OpenClaw, Pi and Hermes (react), one ladder scenario.
models:
{models}
engines:
{engines}
protocols: [react]
runtimes: {json.dumps(runtimes)}
suites:
  - id: ladder-one
    path: scenarios
    ids: [ladder-0-001]
decoding: {{temperature: 0, seed: 42, max_tokens: 96, context: 65536}}
repeats: 1
latency_gate: {{warmup: true, attempts: 3, required: 2}}
profiles: [cpu]
"""


@pytest.fixture(scope="session")
def runtimes_snapshot(tmp_path_factory) -> Path:
    matrix = {"matrix/runtimes-e2e.yaml": runtimes_matrix(), "matrix/runtimes-native-e2e.yaml": native_matrix()}
    return make_snapshot(tmp_path_factory.mktemp("runtimes") / "project", matrix)


@pytest.fixture(scope="session")
def runtime_images(docker_client, harness_image_ref, runtimes_snapshot):
    """Each runtime's image, built from its lock (npm ci or pip download on the host, then docker build)."""
    from repro.runtimes.image import build_runtime_images

    loaded = load_matrix(runtimes_snapshot / "matrix" / "runtimes-e2e.yaml")
    return build_runtime_images(loaded.matrix.runtimes, docker_client, lambda line: None)


@pytest.fixture(scope="session")
def runtimes_run(runtimes_snapshot, canary_home, llama_image_ref, runtime_images) -> Path:
    run = ("matrix", "run", "matrix/runtimes-e2e.yaml", "--profile", "cpu", "--out", "results")
    proc = run_repro(runtimes_snapshot, canary_home, *run)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return runtimes_snapshot / "results" / (runtimes_snapshot / "results" / "LATEST").read_text().strip()


def wires(run_dir: Path, protocol: str = "react") -> dict[str, list[RuntimeTurn]]:
    """Each runtime cell's wire of `protocol`, by the runtime's kind (raw cells hold none)."""
    found = {}
    for cell in sorted((run_dir / "cells").iterdir()):
        cell_json = json.loads((cell / "cell.json").read_text())["cell"]
        if cell_json.get("runtime") and cell_json["protocol"] == protocol:
            lines = (cell / "wire.jsonl").read_text().splitlines()
            found[cell_json["runtime"]["kind"]] = [RuntimeTurn.model_validate_json(line) for line in lines]
    return found


def test_each_runtime_plays_its_cell_and_the_bundle_checks_valid(runtimes_run, runtimes_snapshot, canary_home):
    proc = run_repro(runtimes_snapshot, canary_home, "check", str(runtimes_run))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("VALID") >= 3 and "INVALID" not in proc.stdout.replace("0 INVALID", "")
    by_kind = wires(runtimes_run)
    assert set(by_kind) == {"openclaw", "pi", "hermes"}
    for kind, turns in by_kind.items():
        assert turns, kind
        first = turns[0]
        assert first.clock == "2026-01-01 12:00:00" and first.exit == 0, (kind, first.stderr[-500:])
        chats = [e for e in first.exchanges if e.path.endswith("/chat/completions")]
        assert chats and chats[0].filled.get("cache_prompt") is False  # the scenario's first request
        request = json.loads(chats[0].request)
        assert "temperature" not in request or kind == "openclaw"  # filled where the runtime sent none
        assert all(e.status == 403 for e in first.exchanges if e.outside)


def native_matrix() -> str:
    """Qwen2.5-Coder-0.5B (its GGUF's template renders tools; SmolLM2's does not, so its native cells
    are excluded) under native_tools through Pi, one ladder scenario: matrix/runtimes-native.yaml's
    Pi llama.cpp cell, cut to one scenario."""
    native = yaml.safe_load((ROOT / "matrix" / "runtimes-native.yaml").read_text())
    native.update(name="runtimes-native-e2e", engines=native["engines"][:1])
    native["runtimes"] = [r for r in native["runtimes"] if r["kind"] == "pi"]
    native["suites"][0]["ids"] = ["ladder-0-001"]
    return yaml.safe_dump(native, sort_keys=False)


@pytest.fixture(scope="session")
def native_run(runtimes_snapshot, canary_home, qwen_gguf, llama_image_ref, runtime_images) -> Path:
    run = ("matrix", "run", "matrix/runtimes-native-e2e.yaml", "--profile", "cpu", "--out", "results/native")
    proc = run_repro(runtimes_snapshot, canary_home, *run)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    native = runtimes_snapshot / "results" / "native"
    return native / (native / "LATEST").read_text().strip()


def test_pi_plays_native_mode_with_the_scenarios_tools_as_its_own(native_run, runtimes_snapshot, canary_home):
    """The native cell checks VALID (runtime-wire and regraded hold it to its wire); Pi ran once for
    the scenario with our extension, and asked the engine with the agent's tools."""
    proc = run_repro(runtimes_snapshot, canary_home, "check", str(native_run))
    assert proc.returncode == 0 and "1 VALID" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    [turn] = wires(native_run, "native_tools")["pi"]
    assert "--no-builtin-tools" in turn.argv and turn.exit in (0, "stopped"), turn.stderr[-500:]
    assert ".pi/repro/repro-tools.ts" in turn.home and ".pi/repro/tools.json" in turn.home
    chats = [e for e in turn.exchanges if e.path.endswith("/chat/completions")]
    offered = {tool["function"]["name"] for tool in json.loads(chats[0].request)["tools"]}
    assert offered == {"get_weather", "web_search", "finish"}  # ladder-0-001's agent's tools
    ran = [call for call in turn.calls if call.reply is not None]
    assert all(call.result for call in ran[:-1])  # each step's result went back to Pi, but the last's


def test_the_injected_system_prompts_are_shown_with_the_pinned_date(runtimes_run, runtimes_snapshot, canary_home):
    proc = run_repro(runtimes_snapshot, canary_home, "results", "runtimes", str(runtimes_run), "--json")
    assert proc.returncode == 0, proc.stderr
    summaries = {s["runtime"].split("-")[0]: s for s in map(json.loads, proc.stdout.splitlines())}
    assert not summaries["openclaw"]["system_prompt"]  # OpenClaw passes the prompt unchanged
    assert "2026-01-01" in summaries["pi"]["system_prompt"]  # Pi's "Current date", under the pinned clock
    assert "January 01, 2026" in summaries["hermes"]["system_prompt"]  # Hermes' "Conversation started"
    assert any(".update_check" in name for name in summaries["hermes"]["home"])


def test_compare_shows_the_runtime_effect(runtimes_run, runtimes_snapshot, canary_home):
    run = str(runtimes_run)
    runtimes = ("--runtime-a", "openclaw-2026.9.6", "--runtime-b", "pi-0.80.3")
    proc = run_repro(runtimes_snapshot, canary_home, "compare", run, run, *runtimes)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "agent runtime: openclaw==2026.9.6 -> @earendil-works/pi-coding-agent==0.80.3" in proc.stdout
    assert "1 rows compared" in proc.stdout
    wrong = run_repro(runtimes_snapshot, canary_home, "compare", run, run, "--runtime-a", "raw")
    assert wrong.returncode == 2 and "--runtime-a raw: no row of that runtime" in wrong.stderr


# A canned engine of our own for the real Pi: streamed replies, first a web_search call, then finish
CANNED = r"""
import json
from http.server import BaseHTTPRequestHandler, HTTPServer
CALLS = [("web_search", {"query": "3 hours 45 minutes in minutes"}), ("finish", {"summary": "225 minutes."})]
class Engine(BaseHTTPRequestHandler):
    asked = 0
    def do_GET(self):
        self.reply(b'{"data": [{"id": "m"}]}', "application/json")
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        name, args = CALLS[min(Engine.asked, 1)]
        Engine.asked += 1
        call = {"index": 0, "id": f"call_{Engine.asked}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
        delta = {"role": "assistant", "tool_calls": [call]}
        events = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}}]
        text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.reply(text.encode(), "text/event-stream")
    def reply(self, data, kind):
        self.send_response(200); self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data))); self.end_headers(); self.wfile.write(data)
HTTPServer(("127.0.0.1", 8080), Engine).serve_forever()
"""


def test_the_real_pi_runs_a_call_through_the_desk(docker_client, runtime_images, tmp_path):
    """Pi itself, in its image, sealed, offered ladder-0-001's tools through our extension: the
    canned engine's call goes through Pi to the harness's desk, runs in the workspace, its result
    goes back to Pi, and the finish that follows ends the scenario (Pi stopped, as the loop ended)."""
    [image] = [ref for ref in runtime_images if "runtime-pi" in ref.reference]
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    (tmp_path / "canned.py").write_text(CANNED)
    harness = (
        "python3 -m harness run --scenarios /suite/scenarios --base-url http://127.0.0.1:8080 --model m"
        " --protocol native_tools --ids ladder-0-001 --max-tokens 64 --timeout 60 --runtime pi"
        " --runtime-clock '2026-01-01 12:00:00' --runtime-context 65536 --wire /out/wire.jsonl"
        " --out /out/scenarios.jsonl --transcripts /out/transcripts.jsonl"
    )
    container = docker_client.containers.run(
        image.id,
        entrypoint=["sh", "-c", f"python3 /canned.py & sleep 1; {harness}"],
        network_mode="none",
        volumes={
            str(ROOT / "scenarios"): {"bind": "/suite/scenarios", "mode": "ro"},
            str(ROOT / "fixtures"): {"bind": "/suite/fixtures", "mode": "ro"},
            str(tmp_path / "canned.py"): {"bind": "/canned.py", "mode": "ro"},
            str(out): {"bind": "/out", "mode": "rw"},
        },
        detach=True,
    )
    try:
        status = container.wait(timeout=300)["StatusCode"]
        logs = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status == 0, logs[-3000:]
    [turn] = [RuntimeTurn.model_validate_json(line) for line in (out / "wire.jsonl").read_text().splitlines()]
    assert [(c.name, c.id, c.reply) for c in turn.calls] == [("web_search", "call_1", 0), ("finish", "call_2", 1)]
    assert turn.calls[0].result and turn.calls[0].result.startswith("(ok) ") and turn.exit == "stopped"
    second = json.loads([e for e in turn.exchanges if e.path.endswith("/chat/completions")][1].request)
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [("call_1", turn.calls[0].result)]
    [result] = [json.loads(line) for line in (out / "scenarios.jsonl").read_text().splitlines()]
    assert result["status"] == "done" and result["steps"] == 2
