"""repro's driver for Local Agent Bench (LAB) inside its sealed container (the standard library and
the image's openssl).

It runs LAB's own command line, unchanged, in a copy of LAB's project folder named as LAB expects
(`local-agent-bench`, with a fresh HOME beside it):

    python3 -m local_agent_bench run --runtime RUNTIME --model MODEL --benchmark BENCHMARK

with `OLLAMA_BASE_URL` pointing at the sealed engine. LAB's weather tool and its preflight call
Open-Meteo's hosts over HTTPS, written in its code: the driver answers them with **fixture hosts**
inside the sandbox. A certificate authority made for this run alone (openssl, a fresh key each
run) signs one certificate naming every fixture host; LAB's Python trusts it through
`SSL_CERT_FILE`; and a `sitecustomize` module on LAB's `PYTHONPATH` resolves each fixture host's
name to the driver's own loopback server (socket.getaddrinfo, for those names only: LAB's code and
every other name are untouched; the sandbox has no other network and no resolver). The answers
come from the fixture world mounted read-only (`--fixtures`, repro's `fixtures/weather/*.json`):
Open-Meteo's geocoding (`/v1/search?name=`) and forecast (`/v1/forecast?latitude=&longitude=`,
the `current` fields asked for) shapes. A city or a place the world lacks answers 404.

It keeps, in `--out`:

- `result.json`: the result file LAB wrote, byte for byte (its metadata, per task its score,
  failure_reason, tool_calls, final_answer, raw_transcript and assertion_results);
- `console.txt`: everything LAB printed (its `Summary: k/n passed` line among it), echoed on stderr;
- `fixtures.jsonl`: each request a fixture host answered (host, path and query, status) and the
  sha256 of the answer's bytes;
- `driver.json`: the benchmark, the command, the environment LAB got, the fixture hosts, the fixture world's
  files by sha256, where LAB wrote its result and how LAB exited;
- one JSON progress line per task on stdout, once LAB has finished (repro's progress display).

Usage: python3 driver.py --out DIR --benchmark PATH --runtime NAME --base-url URL --model NAME
       --fixtures DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PROJECT = Path(os.environ.get("REPRO_LAB_PROJECT", "/opt/lab/local-agent-bench"))  # tests point it elsewhere
WORK = Path(os.environ.get("REPRO_LAB_WORK", "/tmp/lab"))
FIXTURE_HOSTS = ("geocoding-api.open-meteo.com", "api.open-meteo.com")
PYTHON = "/usr/bin/python3"
MAX_CONSOLE = 4 * 1024 * 1024
# resolves the fixture hosts (REPRO_FIXTURE_HOSTS="name,name", REPRO_FIXTURE_PORT) to the driver's server
SITECUSTOMIZE = """
import os, socket
_hosts = set(filter(None, os.environ.get("REPRO_FIXTURE_HOSTS", "").split(",")))
_port = int(os.environ.get("REPRO_FIXTURE_PORT", "0"))
_resolve = socket.getaddrinfo
def getaddrinfo(host, port, *args, **kwargs):
    if isinstance(host, bytes):
        host = host.decode()
    if host in _hosts:
        return _resolve("127.0.0.1", _port, *args, **kwargs)
    return _resolve(host, port, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
"""


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="driver")
    for name in ("--out", "--benchmark", "--runtime", "--base-url", "--model", "--fixtures"):
        parser.add_argument(name, required=True)
    return parser.parse_args(argv)


# ---------------------------------------------------------------- the fixture world


def load_world(folder: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The cities of every weather world file, and each file's sha256."""
    cities, files = [], {}
    for path in sorted(folder.glob("*.json")):
        data = path.read_bytes()
        files[path.name] = hashlib.sha256(data).hexdigest()
        cities += json.loads(data).get("cities", [])
    return cities, files


def geocoding(cities: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any] | None:
    name = (query.get("name") or [""])[0].strip().lower()
    found = [c for c in cities if c["name"].lower() == name]
    count = int((query.get("count") or ["10"])[0])
    results = [
        {
            "id": index + 1,
            "name": c["name"],
            "latitude": c["forecast"]["latitude"],
            "longitude": c["forecast"]["longitude"],
            "country": c.get("country"),
            "admin1": c.get("admin1"),
            "timezone": c["forecast"].get("timezone"),
        }
        for index, c in enumerate(found[:count])
    ]
    return {"results": results, "generationtime_ms": 0.1} if results else {"generationtime_ms": 0.1}


def forecast(cities: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any] | None:
    """The city at exactly those coordinates (to two decimals), its `current` fields as asked."""
    try:
        where = (round(float(query["latitude"][0]), 2), round(float(query["longitude"][0]), 2))
    except (KeyError, ValueError):
        return None
    found = [c for c in cities if (round(c["forecast"]["latitude"], 2), round(c["forecast"]["longitude"], 2)) == where]
    if not found:
        return None
    whole = found[0]["forecast"]
    asked = [f for f in ",".join(query.get("current", [])).split(",") if f]
    answer = {k: v for k, v in whole.items() if k not in ("current", "current_units", "daily", "daily_units")}
    if asked:
        answer["current_units"] = {k: v for k, v in whole["current_units"].items() if k in ("time", "interval", *asked)}
        answer["current"] = {k: v for k, v in whole["current"].items() if k in ("time", "interval", *asked)}
    return answer


class FixtureServer:
    """The fixture hosts on one loopback port, over TLS; every answer recorded."""

    def __init__(self, cities: list[dict[str, Any]], context: ssl.SSLContext, log: Path) -> None:
        self.cities, self.log, self.lock = cities, log.open("a", encoding="utf-8"), threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def answer(self, host: str, target: str) -> tuple[int, bytes]:
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        routes = {("geocoding-api.open-meteo.com", "/v1/search"): geocoding, ("api.open-meteo.com", "/v1/forecast"): forecast}
        route = routes.get((host, parts.path))
        body = route(self.cities, query) if route is not None else None
        if body is None:
            return 404, json.dumps({"error": True, "reason": "not in repro's fixture world"}).encode()
        return 200, json.dumps(body).encode()

    def record(self, host: str, target: str, status: int, data: bytes) -> None:
        line = {"host": host, "target": target, "status": status, "sha256": hashlib.sha256(data).hexdigest()}
        with self.lock:
            self.log.write(json.dumps(line, sort_keys=True) + "\n")
            self.log.flush()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fixtures = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                host = (self.headers.get("host") or "").split(":")[0].lower()
                status, data = fixtures.answer(host, self.path)
                fixtures.record(host, self.path, status, data)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def certificates(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate authority of this run's own, and one certificate for every fixture host."""
    folder.mkdir(parents=True)
    names = ",".join(f"DNS:{h}" for h in FIXTURE_HOSTS)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, cwd=folder, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=repro fixture hosts CA (this run only)",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    )
    openssl(
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        f"/CN={FIXTURE_HOSTS[0]}",
        "-keyout",
        "host.key",
        "-out",
        "host.csr",
    )
    (folder / "ext.cnf").write_text(f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "host.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "host.pem")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "host.pem", folder / "host.key")
    return folder / "ca.pem", context


# ---------------------------------------------------------------- LAB's run


def lab_env(args: argparse.Namespace, ca: Path, port: int, home: Path, site: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "OLLAMA_BASE_URL": args.base_url,
        "SSL_CERT_FILE": str(ca),
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        "REPRO_FIXTURE_HOSTS": ",".join(FIXTURE_HOSTS),
        "REPRO_FIXTURE_PORT": str(port),
    }


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Path(args.out)
    shutil.rmtree(WORK, ignore_errors=True)
    project, home, site = WORK / "local-agent-bench", WORK / "home", WORK / "site"
    shutil.copytree(PROJECT, project)
    home.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    cities, world = load_world(Path(args.fixtures) / "weather")
    ca, context = certificates(WORK / "tls")
    server = FixtureServer(cities, context, out / "fixtures.jsonl")
    env = lab_env(args, ca, server.port, home, site)
    command = [PYTHON, "-m", "local_agent_bench", "run", "--runtime", args.runtime, "--model", args.model, "--benchmark", args.benchmark]
    before = set(project.rglob("*.json"))
    with (out / "console.txt").open("wb") as console:
        code = subprocess.run(command, cwd=project, env=env, stdout=console, stderr=subprocess.STDOUT).returncode
    written = sorted(p for p in set(project.rglob("*.json")) - before if p.is_file() and not p.is_symlink())
    if len(written) == 1:
        shutil.copyfile(written[0], out / "result.json")
    record = {
        "benchmark": args.benchmark,
        "command": command,
        "env": {k: v for k, v in env.items() if k not in ("HOME", "PYTHONPATH", "SSL_CERT_FILE")},
        "fixture_hosts": list(FIXTURE_HOSTS),
        "fixture_world": world,
        "result_file": str(written[0].relative_to(project)) if len(written) == 1 else None,
        "results_written": len(written),
        "exit": code,
    }
    (out / "driver.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    sys.stderr.write((out / "console.txt").read_bytes()[-MAX_CONSOLE:].decode("utf-8", "replace"))
    progress(out / "result.json")
    return code if len(written) == 1 else (code or 1)


def progress(result: Path) -> None:
    """One progress line per task of LAB's result (repro's progress display), once LAB has finished."""
    try:
        tasks = json.loads(result.read_text()).get("tasks", [])
    except (OSError, ValueError, AttributeError):
        return
    for index, task in enumerate(tasks, start=1):
        if isinstance(task, dict):
            line = {"event": "scenario", "index": index, "total": len(tasks), "id": str(task.get("id")), "passed": bool(task.get("passed")), "seconds": 0.0}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
