"""ToolCallBench against the real engine: `repro matrix run` of matrix/toolcallbench-smoke.yaml
(five tasks, one per group, on Qwen2.5-Coder-0.5B-Instruct with the pinned llama.cpp build) from
a clean snapshot gives a VALID cell whose tables show ToolCallBench's groups; its own report is
reproduced from the bundle; `repro verify` reproduces the row it publishes; and a tampered raw
result makes the cell INVALID. Whatever the model scores is reported, never asserted: the
0.5B model writes its calls as fenced JSON text, which ToolCallBench counts as `text_tool_call`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_cell, read_results
from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.test_toolcallbench import RAW_DB, rehash

pytestmark = [pytest.mark.docker, pytest.mark.engine]
MATRIX = "matrix/toolcallbench-smoke.yaml"


@pytest.fixture(scope="module")
def tcb_run(
    tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, llama_image_ref, tcb_wheels
) -> tuple[Path, Path]:
    project = make_snapshot(tmp_path_factory.mktemp("toolcallbench") / "project")
    for step in (["suites", "fetch", MATRIX], ["images", "build", MATRIX, "--profile", "cpu", "--no-log"]):
        proc = run_repro(project, canary_home, *step)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_repro(
        project, canary_home, "matrix", "run", MATRIX, "--profile", "cpu", "--out", "results", timeout=3 * 3600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, project / "results" / (project / "results" / "LATEST").read_text().strip()


def test_toolcallbench_runs_sealed_against_the_engine_and_checks_valid(tcb_run, canary_home) -> None:
    project, run_dir = tcb_run
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0, check.stdout + check.stderr
    (cell_dir,) = [p for p in (run_dir / "cells").iterdir() if p.is_dir()]
    record = load_cell(cell_dir)
    results = read_results(cell_dir)
    assert [r.id for r in results] == ["chain-01", "edit-01", "failure-01", "read-01", "run-01"]
    assert record.harness_image is not None and record.harness_image.labels["repro.external"] == "toolcallbench"
    assert record.sandbox.harness is not None and record.sandbox.harness.network_mode.startswith("container:")
    print("ToolCallBench on the engine:", {r.id: (r.passed, r.failure_type, r.failure_evidence) for r in results})


def test_tables_report_and_verify_reproduce_from_the_bundle(tcb_run, canary_home, tmp_path: Path) -> None:
    project, run_dir = tcb_run
    render = run_repro(project, canary_home, "paper", "render", str(run_dir), "--out", str(tmp_path / "tables"))
    assert render.returncode == 0, render.stdout + render.stderr
    table = (tmp_path / "tables" / "results.md").read_text()
    assert all(group in table for group in ("chain", "edit", "failure", "read", "run"))
    verify = run_repro(
        project, canary_home, "verify", str(run_dir), "--published", str(tmp_path / "tables" / "results.json")
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = run_repro(project, canary_home, "external", "report", str(run_dir), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stdout + report.stderr
    (cell_dir,) = [p for p in (run_dir / "cells").iterdir() if p.is_dir()]
    assert (tmp_path / "report" / cell_dir.name / "repro.md").read_bytes() == (
        cell_dir / "raw.results__reports__repro.md"
    ).read_bytes()


def test_a_tampered_raw_result_makes_the_cell_invalid(tcb_run, canary_home, tmp_path: Path) -> None:
    project, run_dir = tcb_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    (cell_dir,) = [p for p in (forged / "cells").iterdir() if p.is_dir()]
    with sqlite3.connect(cell_dir / RAW_DB) as db:
        db.execute("UPDATE runs SET passed = 1 - passed WHERE task_id = 'read-01'")
    rehash(cell_dir, [RAW_DB])
    Bundle(forged, Redactor()).write_manifest()  # every hash made to agree: only the recomputations can tell
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 1 and "INVALID" in check.stdout, check.stdout + check.stderr
    assert "raw outputs" in check.stdout or "disagree" in check.stdout, check.stdout
    assert json.loads((forged / "run.json").read_text())["status"] == "complete"
