"""repro's driver for Local Agent Bench (LAB) inside its sealed container (the standard library and
the image's openssl).

It runs LAB's own command line, unchanged, in a copy of LAB's project folder named as LAB expects
(`local-agent-bench`, with a fresh HOME beside it):

    python3 -m local_agent_bench run --runtime RUNTIME --model MODEL --benchmark BENCHMARK --output FILE

with `OLLAMA_BASE_URL` pointing at the sealed engine. LAB's preflight asks the `ollama` command for its
version: the sandbox has no Ollama client, so LAB's PATH begins with a command of the driver's own
named `ollama` (written into the image at build time, `driver.py --install-commands DIR`)
that answers `--version` alone, in the client's words (`ollama version is X`), X from the sealed
engine's `/api/version` (anything else: exit 1). LAB's weather tool and its preflight call
Open-Meteo's hosts over HTTPS, written in its code: the driver answers them with **fixture hosts**
inside the sandbox. A certificate authority made for this run alone (openssl, a fresh key each
run) signs one certificate naming every fixture host; LAB's Python trusts it through
`SSL_CERT_FILE`; and a `sitecustomize` module on LAB's `PYTHONPATH` resolves each fixture host's
name to the driver's own loopback server (socket.getaddrinfo, for those names only: LAB's code and
every other name are untouched; the sandbox has no other network and no resolver). The answers
come from the fixture worlds mounted read-only (`--fixtures`, once or more: each folder's
`weather/*.json`, repro's `fixtures/weather` and images/lab/world's places LAB resolves from its own
table): Open-Meteo's geocoding (`/v1/search?name=`, the name exactly) and forecast
(`/v1/forecast?latitude=&longitude=`, the `current` fields asked for: the world's city within 0.1
degree of the point, as Open-Meteo answers a point from its nearest grid cell) shapes. A name or a
point the worlds lack answers 404.

With `--runtime-kind` LAB runs one of its CLI runtimes (`openclaw-react`, `pi-react`,
`hermes-react`), each turn of its react loop the runtime's own command line: the image is built on
repro's image of that runtime (images/runtime/), whose adapter (harness.runtimes, run by the harness
image's Python) writes the runtime's configuration into LAB's fresh HOME, the sealed engine its
provider (`--engine-model`, `--context`, `--max-tokens`). LAB's variable for the runtime's command
(`LOCAL_AGENT_BENCH_OPENCLAW_BIN`, `_HERMES_BIN`, `_PI_COMMAND`) names the driver's
`repro-runtime` command, which runs the runtime's program with LAB's arguments unchanged, under the
runtime's own environment and its pinned clock (`--clock`, libfaketime), without what the driver
gave LAB's own tools.

It keeps, in `--out`:

- `result.json`: the result file LAB wrote (`--output`), byte for byte (its metadata, runtime, model
  and benchmark, then per task its task_id, category, score, failure_reason, final_answer,
  tool_calls, latency_ms, raw_transcript and assertion_results);
- `console.txt`: everything LAB printed (its `Summary: k/n passed` line among it), echoed on stderr;
- `fixtures.jsonl`: each request a fixture host answered (host, path and query, status) and the
  sha256 of the answer's bytes;
- `driver.json`: the benchmark, the command, the environment LAB got, the runtime (its kind, program
  and environment; null for raw-ollama-react), the fixture hosts, the fixture worlds' files by
  sha256, whether LAB wrote its result and how LAB exited (LAB exits 1 when a task failed: with a
  result written, the driver exits 0);
- one JSON progress line per task on stdout, once LAB has finished (repro's progress display).

Usage: python3 driver.py --out DIR --benchmark PATH --runtime NAME --base-url URL --model NAME
       --fixtures DIR [--fixtures DIR ...]
       [--runtime-kind KIND --engine-model NAME --context N --max-tokens N --clock "YYYY-MM-DD HH:MM:SS"]
       python3 driver.py --install-commands DIR
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
BIN = Path(os.environ.get("REPRO_LAB_BIN", "/opt/lab/bin"))  # the `ollama` command's folder (the sandbox's /tmp is noexec)
FIXTURE_HOSTS = ("geocoding-api.open-meteo.com", "api.open-meteo.com")
PYTHON = "/usr/bin/python3"
MAX_CONSOLE = 4 * 1024 * 1024
MAX_RESULT = 64 * 1024 * 1024
NEAR = 0.1  # degrees: a forecast point answers from the world's city this near
# the `ollama` command LAB's preflight runs: `--version` alone, from the sealed engine's API
OLLAMA_COMMAND = """#!/usr/bin/python3
# repro's stand-in for the ollama command (images/lab/driver.py): it answers --version alone
import json, os, sys, urllib.request
if sys.argv[1:] != ["--version"]:
    sys.exit("repro's ollama command in LAB's sandbox answers --version alone")
with urllib.request.urlopen(os.environ["OLLAMA_BASE_URL"].rstrip("/") + "/api/version", timeout=10) as answer:
    print("ollama version is " + str(json.load(answer)["version"]))
"""
# the command LAB's CLI runtimes run (LOCAL_AGENT_BENCH_*_BIN, _PI_COMMAND): the runtime's program with
# LAB's arguments, unchanged, under the runtime's own environment (its pinned clock among it), without
# what the driver gave LAB's own tools (REPRO_RUNTIME_UNSET)
RUNTIME_COMMAND = """#!/usr/bin/python3
# repro's runtime command in LAB's sandbox (images/lab/driver.py): the runtime's program, LAB's arguments
import json, os, sys
program = json.loads(os.environ["REPRO_RUNTIME_PROGRAM"])
unset = set(json.loads(os.environ["REPRO_RUNTIME_UNSET"]))
env = {k: v for k, v in os.environ.items() if k not in unset and not k.startswith("REPRO_")}
os.execve(program[0], [*program, *sys.argv[1:]], env | json.loads(os.environ["REPRO_RUNTIME_ENV"]))
"""
# run by the harness image's Python: the runtime's adapter (harness.runtimes) writes its configuration
# into LAB's HOME for the engine, and says its program (the leading paths of its turn's command line)
# and its environment (the pinned clock's among it)
CONFIGURE = """
import json, sys
from pathlib import Path
from harness.runtimes.base import Endpoint
from harness.runtimes.client import clock_env
from harness.runtimes.registry import adapter_named
kind, url, model, context, max_tokens, clock, home = sys.argv[1:]
adapter = adapter_named(kind)
endpoint = Endpoint(url=url, model=model, context=int(context), max_tokens=int(max_tokens))
adapter.configure(Path(home), endpoint)
argv = adapter.argv("", endpoint)
program = argv[: next(i for i, part in enumerate(argv) if not part.startswith("/"))]
print(json.dumps({"program": program, "env": adapter.env() | clock_env(clock)}))
"""
# LAB's CLI runtimes, each with the variable LAB reads its command from
LAB_COMMAND_VARIABLES = {
    "openclaw-react": "LOCAL_AGENT_BENCH_OPENCLAW_BIN",
    "hermes-react": "LOCAL_AGENT_BENCH_HERMES_BIN",
    "pi-react": "LOCAL_AGENT_BENCH_PI_COMMAND",
}
HARNESS_PYTHON = os.environ.get("REPRO_LAB_HARNESS_PYTHON", "/opt/repro/bin/python3")
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
    for name in ("--out", "--benchmark", "--runtime", "--base-url", "--model"):
        parser.add_argument(name, required=True)
    parser.add_argument("--fixtures", action="append", required=True)
    # a CLI runtime of LAB's: repro's runtime kind, the engine's name for the model, its context, its
    # most tokens a turn, and the clock it runs under
    for name in ("--runtime-kind", "--engine-model", "--context", "--max-tokens", "--clock"):
        parser.add_argument(name)
    return parser.parse_args(argv)


# ---------------------------------------------------------------- the fixture world


def load_world(folders: list[Path]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The cities of every weather world file of the folders, and each file's sha256 by name."""
    cities, files = [], {}
    for path in sorted(p for folder in folders for p in folder.glob("*.json")):
        if path.name in files:
            raise SystemExit(f"fixture world: two files named {path.name}")
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
    """The nearest city within NEAR degrees of the point, its `current` fields as asked."""
    try:
        latitude, longitude = float(query["latitude"][0]), float(query["longitude"][0])
    except (KeyError, ValueError):
        return None
    offsets = [(abs(c["forecast"]["latitude"] - latitude), abs(c["forecast"]["longitude"] - longitude)) for c in cities]
    near = sorted((sum(offset), index) for index, offset in enumerate(offsets) if max(offset) <= NEAR)
    if not near:
        return None
    whole = cities[near[0][1]]["forecast"]
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
        "PATH": f"{BIN}:/usr/bin:/bin",
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


def install_commands(folder: Path) -> None:
    """The `ollama` command and the runtime command, written into the image at build time."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("ollama", OLLAMA_COMMAND), ("repro-runtime", RUNTIME_COMMAND)):
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)


def runtime_env(args: argparse.Namespace, home: Path, lab: dict[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    """For a CLI runtime of LAB's: the runtime configured in LAB's HOME for the engine (its adapter's
    own configuration), and the variables that point LAB at it; with what the driver.json records."""
    if args.runtime_kind is None:
        return {}, {}
    if args.runtime not in LAB_COMMAND_VARIABLES:
        raise SystemExit(f"LAB's runtime {args.runtime} is not one of its CLI runtimes")
    fields = (args.runtime_kind, args.base_url, args.engine_model, args.context, args.max_tokens, args.clock)
    done = subprocess.run([HARNESS_PYTHON, "-c", CONFIGURE, *fields, str(home)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {args.runtime_kind} runtime could not be configured: {done.stderr.strip()[-500:]}")
    runtime, variable = json.loads(done.stdout), LAB_COMMAND_VARIABLES[args.runtime]
    env = {
        variable: str(BIN / "repro-runtime"),  # LAB runs it for each turn
        "REPRO_RUNTIME_PROGRAM": json.dumps(runtime["program"]),
        "REPRO_RUNTIME_ENV": json.dumps(runtime["env"]),
        "REPRO_RUNTIME_UNSET": json.dumps(sorted(set(lab) - {"PATH", "HOME", "LANG", "TZ", "OLLAMA_BASE_URL"})),
    }
    return env, {"kind": args.runtime_kind, "engine_model": args.engine_model, "variable": variable, **runtime}


def prepare() -> tuple[Path, Path, Path]:
    """A fresh copy of LAB's folder, a fresh HOME and the name resolver."""
    shutil.rmtree(WORK, ignore_errors=True)
    project, home, site = WORK / "local-agent-bench", WORK / "home", WORK / "site"
    shutil.copytree(PROJECT, project)
    for folder in (home, site):
        folder.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return project, home, site


def kept(result: Path, out: Path) -> bool:
    """LAB's result file copied out, when LAB wrote one (a regular file within MAX_RESULT bytes)."""
    if result.is_symlink() or not result.is_file() or result.stat().st_size > MAX_RESULT:
        return False
    shutil.copyfile(result, out / "result.json")
    return True


def main(argv: list[str]) -> int:
    if argv[:1] == ["--install-commands"] and len(argv) == 2:
        install_commands(Path(argv[1]))
        return 0
    args = parse(argv)
    out = Path(args.out)
    project, home, site = prepare()
    cities, world = load_world([Path(folder) / "weather" for folder in args.fixtures])
    ca, context = certificates(WORK / "tls")
    server = FixtureServer(cities, context, out / "fixtures.jsonl")
    env = lab_env(args, ca, server.port, home, site)
    runtime, runtime_record = runtime_env(args, home, env)
    env |= runtime
    result = WORK / "result.json"
    command = [PYTHON, "-m", "local_agent_bench", "run", "--runtime", args.runtime, "--model", args.model]
    command += ["--benchmark", args.benchmark, "--output", str(result)]
    with (out / "console.txt").open("wb") as console:
        code = subprocess.run(command, cwd=project, env=env, stdout=console, stderr=subprocess.STDOUT).returncode
    written = kept(result, out)
    record = {
        "benchmark": args.benchmark,
        "command": command,
        "env": {k: v for k, v in env.items() if k not in ("HOME", "PYTHONPATH", "SSL_CERT_FILE", *runtime)},
        "runtime": runtime_record or None,
        "fixture_hosts": list(FIXTURE_HOSTS),
        "fixture_world": world,
        "ollama_command": "repro's, answering --version from the engine's /api/version",
        "result_written": written,
        "exit": code,
    }
    (out / "driver.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    sys.stderr.write((out / "console.txt").read_bytes()[-MAX_CONSOLE:].decode("utf-8", "replace"))
    progress(out / "result.json")
    return 0 if written and code in (0, 1) else (code or 1)


def progress(result: Path) -> None:
    """One progress line per task of LAB's result (repro's progress display), once LAB has finished."""
    try:
        tasks = json.loads(result.read_text()).get("results", [])
    except (OSError, ValueError, AttributeError):
        return
    for index, task in enumerate(tasks, start=1):
        if isinstance(task, dict):
            passed = task.get("score") == 1.0  # LAB's Summary counts a task passed at score 1.0
            seconds = task.get("latency_ms", 0) / 1000 if isinstance(task.get("latency_ms"), int) else 0.0
            line = {"event": "scenario", "index": index, "total": len(tasks), "id": str(task.get("task_id")), "passed": passed, "seconds": seconds}
            print(json.dumps(line), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
