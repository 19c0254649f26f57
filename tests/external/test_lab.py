"""The LAB path without Docker: repro's driver (images/lab/driver.py) on the host runs the repro
project's stand-in for Local Agent Bench (tests/standins/local_agent_bench/, our own code with LAB's
command line and result file; not LAB), packed and unpacked as its pin says, against a canned Ollama
of our own; its weather tool's HTTPS hosts are answered by the driver's fixture hosts from
fixtures/weather and images/lab/world (a certificate authority of the run's own, the names resolved
to loopback for LAB's Python alone). Then the adapter reads the raw outputs: LAB's verdicts kept, its
summary re-derived and its own scoring re-run on its evidence, a forged summary or score named. The
sealed run on the real Ollama is tests/external/test_lab_engine.py."""

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
from repro.suites.external.lab import FIXTURE_WORLDS, Lab
from repro.suites.external.lab_check import recheck_worker
from repro.suites.external.raw import RawFile, RawIndex
from tests.external.lab_canned_ollama import MODEL, CannedOllama, lisbon_answer

STANDIN_MATRIX = PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml"
DRIVER = PROJECT_ROOT / "images" / "lab" / "driver.py"
IDS = ["fs_where", "fs_readme", "fs_codename", "weather_berlin", "weather_lisbon"]
WORLDS = [arg for folder in FIXTURE_WORLDS for arg in ("--fixtures", str(PROJECT_ROOT / folder))]


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


def run_driver(
    project: Path, out: Path, base_url: str, work: Path, worlds: list[str] = WORLDS
) -> subprocess.CompletedProcess:
    out.mkdir()
    command = [sys.executable, str(DRIVER), "--out", str(out), "--benchmark", "benchmarks/smoke.json"]
    command += ["--runtime", "raw-ollama-react", "--base-url", base_url, "--model", MODEL, *worlds]
    env = dict(
        os.environ, REPRO_LAB_PROJECT=str(project), REPRO_LAB_WORK=str(work), REPRO_LAB_BIN=str(out.parent / "bin")
    )
    subprocess.run([sys.executable, str(DRIVER), "--install-commands", env["REPRO_LAB_BIN"]], check=True)
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
    assert "Summary: 3/5 passed" in console and "FAIL" not in console  # the preflight passed offline
    fixtures = [json.loads(line) for line in (out / "fixtures.jsonl").read_text().splitlines()]
    hosts = {(f["host"], f["target"].split("?")[0], f["status"]) for f in fixtures}
    assert hosts == {("geocoding-api.open-meteo.com", "/v1/search", 200), ("api.open-meteo.com", "/v1/forecast", 200)}
    berlin = [f for f in fixtures if "latitude=52.52" in f["target"]]  # LAB's own table: no geocoding
    assert berlin and all(f["status"] == 200 for f in berlin)
    driver = json.loads((out / "driver.json").read_text())
    assert driver["exit"] == 1 and driver["result_written"]  # LAB exits 1 when a task failed
    assert set(driver["fixture_world"]) == {"june-2026.json", "lab-places.json"}
    progress = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [p["id"] for p in progress] == IDS

    raw, index = raw_of(out)
    normalised = Lab().normalise(raw, index, IDS, "react")
    verdicts = {r.id: (r.category, r.passed, r.failure_type) for r in normalised.results}
    assert verdicts == {
        "fs_where": ("filesystem", True, None),  # the folder get_cwd gave, redacted alike in answer and call
        "fs_readme": ("filesystem", True, None),
        "fs_codename": ("filesystem", False, "no_tool_attempt"),  # LAB's NO_TOOL_ATTEMPT: answered without its tool
        "weather_berlin": ("weather", False, "wrong_outcome"),  # LAB's ASSERTION_FAILED: 99 is not Berlin's
        "weather_lisbon": ("weather", True, None),  # the fixture host's Lisbon, geocoded then forecast
    }
    [lisbon] = [line for line in normalised.transcripts if line.id == "weather_lisbon"]
    assert [e.tool for e in lisbon.transcript if e.kind == "step"] == ["get_weather"]
    assert Lab().recheck(raw, index, standin.parent, "react") == []  # the summary and LAB's scoring agree
    result = json.loads(raw["result.json"])
    assert "<PROJECT_ROOT>" in json.dumps(result) and str(tmp_path) not in json.dumps(result)  # LAB's redaction


def test_a_forged_summary_or_score_is_named(standin: Path, ollama: str, tmp_path: Path) -> None:
    run_driver(standin, tmp_path / "out", ollama, tmp_path / "work")
    raw, _index = raw_of(tmp_path / "out")
    forged_console = dict(raw, **{"console.txt": raw["console.txt"].replace(b"3/5", b"5/5")})
    assert any("LAB printed" in p for p in recheck_worker(forged_console, standin.parent))
    result = json.loads(raw["result.json"])
    result["results"][2].update(score=1.0, failure_reason="PASS")  # fs_codename: answered without reading
    result["results"][3].update(score=0.0, failure_reason="TIMEOUT")  # a score lowered to a run cut short: allowed
    problems = recheck_worker(dict(raw, **{"result.json": json.dumps(result).encode()}), standin.parent)
    assert any("fs_codename: LAB's scoring gives 0 NO_TOOL_ATTEMPT, the result says 1 PASS" in p for p in problems), (
        problems
    )
    assert any("LAB printed" in p for p in problems) and not any("weather_berlin" in p for p in problems), problems
    result = json.loads(raw["result.json"])
    result["results"][4].update(failure_reason="ASSERTION_FAILED")  # a pass with a failure's reason
    problems = recheck_worker(dict(raw, **{"result.json": json.dumps(result).encode()}), standin.parent)
    assert any("weather_lisbon: score 1, reason ASSERTION_FAILED" in p for p in problems), problems


def test_without_the_fixture_world_the_preflight_fails_and_nothing_is_hidden(
    standin: Path, ollama: str, tmp_path: Path
) -> None:
    """A world that lacks the preflight's place: LAB's preflight fails (its own lines kept), no result."""
    empty = tmp_path / "fixtures"
    (empty / "weather").mkdir(parents=True)
    done = run_driver(standin, tmp_path / "out", ollama, tmp_path / "work", ["--fixtures", str(empty)])
    assert done.returncode == 1
    console = (tmp_path / "out" / "console.txt").read_text()
    assert "FAIL [network] weather_api: HTTPError" in console
    assert "PASS [configuration] ollama_cli: ollama version is 0.11.4" in console  # repro's ollama command
    assert not json.loads((tmp_path / "out" / "driver.json").read_text())["result_written"]


def test_the_benchmark_is_run_whole(standin: Path, tmp_path: Path) -> None:
    from repro.core.errors import BadInput

    chosen = suite().model_copy(update={"ids": ["fs_where"]})
    with pytest.raises(BadInput, match="runs benchmarks/smoke.json whole"):
        Lab().selection(chosen, standin.parent, [])
    whole = Lab().selection(suite(), standin.parent, [])
    assert whole.ids == IDS and whole.categories["weather_lisbon"] == "weather"
    shutil.rmtree(tmp_path / "unpacked")


def task(**fields: object) -> dict[str, object]:
    """One task of LAB's result file, with every field LAB writes."""
    base = {"task_id": "a", "category": "filesystem", "runtime": "raw-ollama-react", "model": MODEL}
    return {**base, "score": 0.0, "failure_reason": "NO_TOOL_ATTEMPT", "final_answer": "", **fields}


def document(*tasks: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {},
        "runtime": "raw-ollama-react",
        "model": MODEL,
        "benchmark": "benchmarks/smoke.json",
        "results": list(tasks),
    }


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
        (document({"task_id": "a", "score": 1.0}), "not LAB's result file"),  # fields missing
        (document(task(), task(task_id="b")), "the benchmark has a"),
        (document(task(tool_calls=[{"name": "x", "args": [], "ok": True}])), "not LAB's result file"),
        (b"[" * 100 + b"]" * 100, "not LAB's result file"),  # nesting past the bound
    ],
)
def test_a_result_file_that_is_not_labs_is_refused_in_one_line(result: object, says: str) -> None:
    from repro.core.errors import BadInput

    raw, index = crafted(result)
    with pytest.raises(BadInput, match=says):
        Lab().normalise(raw, index, ["a"], "react")


def test_a_missing_result_or_driver_record_is_named(standin: Path) -> None:
    raw, _index = crafted(document(task(task_id="fs_where", score=0.0, failure_reason="NO_TOOL_ATTEMPT")))
    assert recheck_worker(raw, standin.parent) == []  # LAB's scoring agrees: get_cwd was required, none called
    without = {k: v for k, v in raw.items() if k != "result.json"}
    assert any("no result.json" in p for p in recheck_worker(without, standin.parent))
    undriven = {k: v for k, v in raw.items() if k != "driver.json"}
    assert any("driver.json" in p for p in recheck_worker(undriven, standin.parent))


def test_a_reason_lab_does_not_have_reads_as_a_run_cut_short_and_keeps_its_words(standin: Path) -> None:
    raw, index = crafted(document(task(task_id="fs_where", score=0.5, failure_reason="MARTIAN")))
    [result] = Lab().normalise(raw, index, ["fs_where"], "react").results
    assert result.failure_type == "step_limit" and "MARTIAN" in (result.failure_evidence or "")
    assert result.partial_score == 0.5 and not result.engine_fault
    assert any("ended MARTIAN before scoring, yet scored 0.5" in p for p in recheck_worker(raw, standin.parent))


def test_labs_scoring_raising_on_the_evidence_is_named_not_crashed() -> None:
    from types import SimpleNamespace

    from repro.suites.external.lab_check import rescored
    from repro.suites.external.lab_raw import LabTaskResult

    def score_task(*args: object) -> None:
        raise AttributeError("no")

    lab = {"scoring": SimpleNamespace(score_task=score_task), "types": SimpleNamespace(ToolCall=dict)}
    recorded = LabTaskResult.model_validate(task())
    assert rescored(lab, object(), recorded) == ["a: LAB's scoring raised AttributeError on the recorded evidence"]
