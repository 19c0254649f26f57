"""A real engine killed mid-cell: the run notices, heals the engine and reruns the cell, and the
healed cell's transcripts equal an undisturbed run's. Marked `faults`: not in the default run
(pyproject addopts); run it with `flock /tmp/repro-engine.lock pytest -m faults tests/e2e/test_engine_kill.py`."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_cell
from tests.e2e.conftest import e2e_matrix, make_snapshot, repro_command, repro_env, run_repro
from tests.e2e.test_run import cells_of, outcome, repro_containers

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.faults]
TINY_SUITE = """\
  - id: tiny
    path: scenarios
    categories: [notes, table_read_answer, ask]
    per_category: 1"""
ARGS = ["matrix", "run", "matrix/faults.yaml", "--profile", "cpu"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_snapshot(tmp_path_factory.mktemp("faults") / "project", {"matrix/faults.yaml": e2e_matrix(TINY_SUITE)})


def run_dir_of(project: Path, out: str) -> Path | None:
    latest = project / out / "LATEST"
    return project / out / latest.read_text().strip() if latest.is_file() else None


def harness_running(run_id: str) -> bool:
    """The cell's harness itself (not its sandbox audit) is running."""
    for container in repro_containers(run_id):
        if (
            container.labels.get("repro.role") == "harness"
            and container.status == "running"
            and "audit" not in (container.attrs["Config"]["Cmd"] or [])
        ):
            return True
    return False


def kill_engine_once_harness_runs(project: Path, out: str, proc: subprocess.Popen, seconds_in: float) -> str:
    """Wait until the harness has run `seconds_in` seconds, then SIGKILL the engine container."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        run_dir = run_dir_of(project, out)
        if run_dir is not None and harness_running(run_dir.name):
            time.sleep(seconds_in)
            engines = [c for c in repro_containers(run_dir.name) if c.labels.get("repro.role") == "engine"]
            assert len(engines) == 1, engines
            engines[0].kill()
            return run_dir.name
        time.sleep(0.5)
    raise AssertionError("the harness never ran")


def test_killed_engine_is_healed_and_the_cell_equals_an_undisturbed_run(
    project, canary_home, harness_image_ref, llama_image_ref
):
    undisturbed = run_repro(project, canary_home, *ARGS, "--out", "results/undisturbed")
    assert undisturbed.returncode == 0, undisturbed.stdout[-3000:] + undisturbed.stderr[-3000:]
    proc = subprocess.Popen(
        repro_command(*ARGS, "--out", "results/killed"),
        cwd=project,
        env=repro_env(project, canary_home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        run_id = kill_engine_once_harness_runs(project, "results/killed", proc, seconds_in=5)
        output, _ = proc.communicate(timeout=1500)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-4000:]
    assert "engine fault" in output and "rerunning" in output
    assert repro_containers(run_id) == [] and repro_containers(run_dir_of(project, "results/undisturbed").name) == []
    killed_dir = project / "results" / "killed" / run_id
    assert json.loads((killed_dir / "run.json").read_text())["status"] == "complete"
    baseline = cells_of(run_dir_of(project, "results/undisturbed"))
    for name, cell_dir in cells_of(killed_dir).items():
        record = load_cell(cell_dir)
        assert record.status == "done" and record.summary.engine_faults == 0
        assert len(record.engine_incidents) == 1 and record.engine_incidents[0].healed
        assert record.engine_incidents[0].fault.exit_code == 137
        assert record.sandbox_audit is not None and record.sandbox_audit.escapes() == []
        assert outcome(cell_dir) == outcome(baseline[name]), name
    assert not any(p.name.startswith(".") for p in (killed_dir / "cells").iterdir()), "a partial cell was left"
    assert run_repro(project, canary_home, "check", str(killed_dir)).returncode == 0
