"""``python -m harness``: bad input, replay, run against a loopback stub engine, lint, probe."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_malformed_scenario_exits_2_with_one_line(write_scenario, scenario_dict, capsys) -> None:
    data = scenario_dict()
    data["expect"] = [{"type": "rowz"}]
    path = write_scenario(data)
    assert main(["replay", "--scenarios", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"harness: {path} expect[0].type: unknown check type 'rowz'\n"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["dance"],
        ["run", "--scenarios", "x"],
        ["replay", "--scenarios", "/nonexistent"],
        ["run", "--scenarios", "x", "--base-url", "u", "--model", "m", "--out", "o", "--max-tokens", "zero"],
    ],
)
def test_bad_input_is_one_line_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness: ")


def test_replay_of_tholos_prints_overall(tholos_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "replay.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", "--scenarios", str(tholos_dir), "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[1/160] approval-001 PASS (")
    assert lines[-1] == "Overall: 160/160"
    assert "web_research       14/14" in lines
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 160 and all(r["passed"] and r["failure_type"] is None for r in records)
    assert records[0]["transcript"][0]["kind"] == "trigger"


def test_help_works() -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "run" in done.stdout and "replay" in done.stdout


def test_probe_dispatches_lazily(monkeypatch, capsys) -> None:
    import types

    fake = types.ModuleType("harness.probe")
    fake.main = lambda argv: 7 if argv == ["--x"] else 0
    monkeypatch.setitem(sys.modules, "harness.probe", fake)
    assert main(["probe", "--x"]) == 7


# ---------------------------------------------------------------------------- run


class _StubEngine(BaseHTTPRequestHandler):
    """A loopback OpenAI-compatible server that replays the reference of each scenario."""

    replies: list[str] = []

    def do_GET(self) -> None:  # /v1/models
        self._send(200, {"data": [{"id": "stub"}]})

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        json.loads(self.rfile.read(length))
        content = self.replies.pop(0)
        self._send(
            200,
            {
                "choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10},
                "timings": {"predicted_ms": 3.0},
            },
        )

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def stub_engine():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubEngine)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _reply(tool: str, args: dict) -> str:
    return json.dumps({"thought": "next", "tool": tool, "args": args})


def test_run_writes_results_and_transcripts(stub_engine, write_scenario, scenario_dict, tmp_path, capsys) -> None:
    good = scenario_dict(id="garden-001", expect=[{"type": "finished"}])
    bad = scenario_dict(id="garden-002", expect=[{"type": "rows", "table": "beds", "count": 9}])
    write_scenario(good)
    folder = write_scenario(bad).parent
    _StubEngine.replies = [_reply("finish", {"summary": "ok"}), "oops", _reply("finish", {"summary": "ok"})]
    out, transcripts = tmp_path / "out.jsonl", tmp_path / "tr.jsonl"
    code = main(
        [
            "run",
            "--scenarios",
            str(folder),
            "--base-url",
            stub_engine,
            "--model",
            "stub",
            "--seed",
            "3",
            "--out",
            str(out),
            "--transcripts",
            str(transcripts),
        ]
    )
    assert code == 0
    stdout = capsys.readouterr().out.splitlines()
    assert stdout[0].startswith("[1/2] garden-001 PASS (")
    assert stdout[1].startswith("[2/2] garden-002 FAIL wrong_outcome (")
    assert stdout[-1] == "Overall: 1/2"
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["garden-001", "garden-002"]
    assert "transcript" not in records[0]
    assert records[1]["invalid_steps"] == 1 and records[1]["tokens_in"] == 100
    assert records[1]["failed_checks"] == [
        {"index": 0, "type": "rows", "expected": {"table": "beds", "count": 9}, "found": 3}
    ]
    lines = [json.loads(x) for x in transcripts.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["garden-001", "garden-002"] and lines[0]["transcript"][0]["kind"] == "trigger"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # temp files renamed


def test_run_exits_3_when_engine_unreachable(write_scenario, scenario_dict, tmp_path, capsys) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = write_scenario(scenario_dict())
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "run",
            "--scenarios",
            str(path),
            "--base-url",
            f"http://127.0.0.1:{port}",
            "--model",
            "m",
            "--timeout",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 3
    assert "engine unreachable" in capsys.readouterr().err
    assert not out.exists()


def test_lint_command(write_scenario, scenario_dict, capsys) -> None:
    data = scenario_dict(id="garden-001", about="Foo bars.")
    path = write_scenario(data)
    assert main(["lint", "--scenarios", str(path.parent)]) == 1
    out = capsys.readouterr().out
    assert f"{path}: placeholder name 'Foo'" in out
