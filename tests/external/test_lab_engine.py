"""The LAB path against the real Ollama: `repro matrix run` of tests/external/lab-standin.yaml, whose
suite pins the repro project's stand-in for Local Agent Bench (tests/standins/local_agent_bench/, our
own code with LAB's command line and result file; not LAB) as an archive in a temporary mirror, as a
LAB archive would be found. The stand-in runs sealed in its image, joined to the sealed Ollama
(0.11.4 from its Go module, Qwen2.5-Coder-0.5B), its weather hosts answered by the driver's fixture
hosts; the bundle checks VALID, holds LAB's own `Summary` line and its result file, and `repro
external report` shows LAB's summary. Nothing measured here says anything about LAB itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.store.sources import MIRROR_ENV
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.conftest import run_lab_matrix
from tests.external.test_lab import IDS

pytestmark = [pytest.mark.docker, pytest.mark.engine]
MATRIX = "tests/external/lab-standin.yaml"


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, lab_mirror) -> tuple[Path, Path]:
    project = make_snapshot(tmp_path_factory.mktemp("lab") / "project")
    return project, run_lab_matrix(project, canary_home, MATRIX)


def test_lab_runs_sealed_on_ollama_and_checks_valid(lab_run, canary_home) -> None:
    project, run_dir = lab_run
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    [cell] = sorted((run_dir / "cells").iterdir())
    console = (cell / "raw.console.txt").read_text()
    assert "Summary: " in console and "FAIL [" not in console  # the preflight passed, no network
    driver = json.loads((cell / "raw.driver.json").read_text())
    assert driver["exit"] in (0, 1) and driver["env"]["OLLAMA_BASE_URL"].startswith("http://127.0.0.1:")
    result = json.loads((cell / "raw.result.json").read_text())
    assert [t["task_id"] for t in result["results"]] == IDS
    passed = sum(t["score"] == 1.0 for t in result["results"])
    assert f"Summary: {passed}/5 passed" in console
    rows = [json.loads(line) for line in (cell / "scenarios.jsonl").read_text().splitlines()]
    assert sum(r["passed"] for r in rows) == passed  # the cell's outcome is LAB's


def test_external_report_shows_labs_own_summary(lab_run, canary_home, tmp_path: Path) -> None:
    project, run_dir = lab_run
    report = run_repro(project, canary_home, "external", "report", str(run_dir), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stdout + report.stderr
    [console] = list((tmp_path / "report").rglob("console.txt"))
    assert "Summary: " in console.read_text()  # LAB's own words, as it printed them


def test_on_a_fresh_home_the_bundle_is_unchecked_naming_the_mirror(lab_run, tmp_path: Path, monkeypatch) -> None:
    """No LAB archive in the cache and no mirror: UNCHECKED (exit 3) with what to set, never INVALID."""
    project, run_dir = lab_run
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    check = run_repro(project, fresh, "check", str(run_dir))
    assert check.returncode == 3 and "1 UNCHECKED" in check.stdout, check.stdout + check.stderr
    assert MIRROR_ENV in check.stdout


def test_a_rerun_of_the_bundle_gives_its_verdict_in_one_command(lab_run, canary_home, tmp_path: Path) -> None:
    """Ollama keeps its cache across a run, so the rerun is judged by the tolerance rule."""
    project, run_dir = lab_run
    rerun = run_repro(project, canary_home, "rerun", str(run_dir), "--out", str(tmp_path / "rerun"))
    report = json.loads((tmp_path / "rerun" / "rerun-report.json").read_text())
    [row] = report["report"]["verdicts"]
    assert row["verdict"].startswith("REPRODUCED"), rerun.stdout[-3000:] + rerun.stderr[-2000:]
    assert "tolerance" in json.dumps(row)
