"""The LAB path without Docker: repro's driver (images/lab/driver.py) on the host runs the repro
project's stand-in for Local Agent Bench (tests/standins/local_agent_bench/, our own code with LAB's
command line and result file; not LAB), packed and unpacked as its pin says, against a canned Ollama
of our own; its weather tool's HTTPS hosts are answered by the driver's fixture hosts from
fixtures/weather (a certificate authority of the run's own, the names resolved to loopback for LAB's
Python alone). Then the adapter reads the raw outputs: LAB's verdicts kept, its summary re-derived,
a forged summary named. The sealed run on the real Ollama is tests/external/test_lab_engine.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from repro.core.config import PROJECT_ROOT
from repro.core.files import sha256_bytes
from repro.spec.loading import load_matrix
from repro.suites.external.lab import Lab, summary_problems
from repro.suites.external.raw import RawFile, RawIndex
from tests.external.lab_canned_ollama import MODEL, CannedOllama, lisbon_answer

STANDIN_MATRIX = PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml"
DRIVER = PROJECT_ROOT / "images" / "lab" / "driver.py"


@pytest.fixture
def ollama() -> Iterator[str]:
    CannedOllama.lisbon = lisbon_answer(PROJECT_ROOT / "fixtures")
    server = ThreadingHTTPServer(("127.0.0.1", 0), CannedOllama)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def suite():
    return load_matrix(STANDIN_MATRIX).matrix.suites[0]


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    """The stand-in packed as its pin says, unpacked: its project folder `local-agent-bench`."""
    from tests.standins import pack_lab

    archive = tmp_path / "lab-standin-src.tar"
    found = pack_lab(archive)
    pinned = suite().external.sha256
    if found != pinned:
        pytest.fail(
            f"the LAB stand-in (tests/standins/local_agent_bench/) packs to sha256 {found}, the pin is {pinned}: "
            "update tests/external/lab-standin.yaml and repro/spec/harnesses.py (HARNESSES['lab'].known_archives)"
        )
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    return tmp_path / "unpacked" / "local-agent-bench"


def run_driver(project: Path, out: Path, base_url: str, work: Path) -> subprocess.CompletedProcess:
    out.mkdir()
    command = [sys.executable, str(DRIVER), "--out", str(out), "--benchmark", "benchmarks/smoke.json"]
    command += ["--runtime", "raw-ollama-react", "--base-url", base_url, "--model", MODEL]
    command += ["--fixtures", str(PROJECT_ROOT / "fixtures")]
    env = dict(os.environ, REPRO_LAB_PROJECT=str(project), REPRO_LAB_WORK=str(work))
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def raw_of(out: Path) -> tuple[dict[str, bytes], RawIndex]:
    raw = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    files = [RawFile(name=n, path=n, worker=1, sha256=sha256_bytes(d), bytes=len(d)) for n, d in raw.items()]
    index = RawIndex(harness="lab", wheel="lab-standin-src.tar", wheel_sha256="0" * 64, workers=1, files=files)
    return raw, index


def test_the_stand_in_runs_sealed_through_the_driver_and_its_verdicts_are_kept(
    standin: Path, ollama: str, tmp_path: Path
) -> None:
    done = run_driver(standin, tmp_path / "out", ollama, tmp_path / "work")
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "out"
    console = (out / "console.txt").read_text()
    assert "Summary: 3/5 passed" in console and "preflight failed" not in console  # the preflight passed offline
    fixtures = [json.loads(line) for line in (out / "fixtures.jsonl").read_text().splitlines()]
    hosts = {(f["host"], f["target"].split("?")[0], f["status"]) for f in fixtures}
    assert ("geocoding-api.open-meteo.com", "/v1/search", 200) in hosts
    assert ("api.open-meteo.com", "/v1/forecast", 200) in hosts
    driver = json.loads((out / "driver.json").read_text())
    assert driver["exit"] == 0 and driver["result_file"] == "results/smoke-raw-ollama-react.json"
    assert set(driver["fixture_world"]) == {"june-2026.json"}
    progress = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [p["id"] for p in progress] == [
        "cwd-name",
        "list-readme",
        "read-benchmark",
        "weather-graz",
        "weather-lisbon",
    ]

    raw, index = raw_of(out)
    ids = [p["id"] for p in progress]
    normalised = Lab().normalise(raw, index, ids, "react")
    verdicts = {r.id: (r.passed, r.failure_type) for r in normalised.results}
    assert verdicts == {
        "cwd-name": (True, None),
        "list-readme": (True, None),
        "read-benchmark": (False, "no_tool_attempt"),  # LAB's NO_TOOL_ATTEMPT: answered without its tool
        "weather-graz": (False, "wrong_outcome"),  # LAB's ASSERTION_FAILED: 99 is not Graz's temperature
        "weather-lisbon": (True, None),  # the fixture host's Lisbon, geocoded then forecast
    }
    [lisbon] = [line for line in normalised.transcripts if line.id == "weather-lisbon"]
    assert [e.tool for e in lisbon.transcript if e.kind == "step"] == ["get_weather"]
    assert Lab().recheck(raw, index, PROJECT_ROOT, "react") == []
    result = json.loads(raw["result.json"])
    assert "<PROJECT_ROOT>" in json.dumps(result) and str(tmp_path) not in json.dumps(result)  # LAB's redaction


def test_a_forged_summary_or_verdict_is_named(standin: Path, ollama: str, tmp_path: Path) -> None:
    assert run_driver(standin, tmp_path / "out", ollama, tmp_path / "work").returncode == 0
    raw, _index = raw_of(tmp_path / "out")
    forged_console = dict(raw, **{"console.txt": raw["console.txt"].replace(b"3/5", b"5/5")})
    assert any("LAB printed" in p for p in summary_problems(forged_console))
    result = json.loads(raw["result.json"])
    result["tasks"][2].update(passed=True)
    forged_result = dict(raw, **{"result.json": json.dumps(result).encode()})
    problems = summary_problems(forged_result)
    assert any("passed with failure reason" in p for p in problems) and any("LAB printed" in p for p in problems)


def test_without_the_fixture_world_the_preflight_fails_and_nothing_is_hidden(
    standin: Path, ollama: str, tmp_path: Path
) -> None:
    """A world that lacks the preflight's city: LAB's preflight fails (its own words kept), no result."""
    empty = tmp_path / "fixtures"
    (empty / "weather").mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, str(DRIVER), "--out", str(out), "--benchmark", "benchmarks/smoke.json"]
    command += ["--runtime", "raw-ollama-react", "--base-url", ollama, "--model", MODEL, "--fixtures", str(empty)]
    env = dict(os.environ, REPRO_LAB_PROJECT=str(standin), REPRO_LAB_WORK=str(tmp_path / "work"))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "preflight failed: the weather API" in (out / "console.txt").read_text()
    assert json.loads((out / "driver.json").read_text())["result_file"] is None


def test_the_benchmark_is_run_whole(standin: Path, tmp_path: Path) -> None:
    from repro.core.errors import BadInput

    chosen = suite().model_copy(update={"ids": ["cwd-name"]})
    with pytest.raises(BadInput, match="runs benchmarks/smoke.json whole"):
        Lab().selection(chosen, standin.parent, [])
    whole = Lab().selection(suite(), standin.parent, [])
    assert whole.ids == ["cwd-name", "list-readme", "read-benchmark", "weather-graz", "weather-lisbon"]
    shutil.rmtree(tmp_path / "unpacked")


def crafted(result: object, console: bytes = b"Summary: 0/1 passed\n") -> tuple[dict[str, bytes], RawIndex]:
    """Raw outputs of one worker as a hostile bundle might hold them."""
    files = {
        "result.json": result if isinstance(result, bytes) else json.dumps(result).encode(),
        "console.txt": console,
        "driver.json": json.dumps({"benchmark": "benchmarks/smoke.json"}).encode(),
    }
    entries = [RawFile(name=n, path=n, worker=1, sha256=sha256_bytes(d), bytes=len(d)) for n, d in files.items()]
    return files, RawIndex(harness="lab", wheel="lab.tar", wheel_sha256="0" * 64, workers=1, files=entries)


@pytest.mark.parametrize(
    ("result", "says"),
    [
        (b"not json", "not LAB's result file"),
        ({"tasks": [{"id": "a"}]}, "not LAB's result file"),  # no score
        ({"tasks": [{"id": "a", "score": 1, "passed": True}, {"id": "b", "score": 0}]}, "the benchmark has a"),
        (b"[" * 100 + b"]" * 100, "not LAB's result file"),  # nesting past the bound
    ],
)
def test_a_result_file_that_is_not_labs_is_refused_in_one_line(result: object, says: str) -> None:
    from repro.core.errors import BadInput

    raw, index = crafted(result)
    with pytest.raises(BadInput, match=says):
        Lab().normalise(raw, index, ["a"], "react")


def test_a_missing_result_or_driver_record_is_named() -> None:
    from repro.core.errors import BadInput

    raw, index = crafted({"tasks": [{"id": "a", "score": 0, "passed": False, "failure_reason": "NO_TOOL_ATTEMPT"}]})
    assert summary_problems(raw) == []
    without = {k: v for k, v in raw.items() if k != "result.json"}
    assert any("no result.json" in p for p in summary_problems(without))
    index = index.model_copy(update={"files": [f for f in index.files if f.name != "driver.json"]})
    with pytest.raises(BadInput, match="driver.json"):
        Lab().normalise({k: v for k, v in raw.items() if k != "driver.json"}, index, ["a"], "react")


def test_a_reason_lab_does_not_have_reads_as_a_run_cut_short_and_keeps_its_words() -> None:
    raw, index = crafted({"tasks": [{"id": "a", "score": 0.5, "passed": False, "failure_reason": "MARTIAN"}]})
    [result] = Lab().normalise(raw, index, ["a"], "react").results
    assert result.failure_type == "step_limit" and "MARTIAN" in (result.failure_evidence or "")
    assert result.partial_score == 0.5 and not result.engine_fault
