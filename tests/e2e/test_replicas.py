"""Replicas for real: two llama.cpp engines of one thread each share a cell's scenarios, and the
cell's transcripts equal the serial one-thread run's. Two short runs of four scenarios, one after
the other (never two groups at once): about three minutes on two cores."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_cell
from repro.core.files import read_regular
from tests.e2e.conftest import e2e_matrix, make_snapshot, run_repro
from tests.e2e.test_run import cells_of, outcome, repro_containers

pytestmark = [pytest.mark.docker, pytest.mark.engine]
FOUR = """\
  - id: four
    path: scenarios
    categories: [notes, table_read_answer, ask, nothing_to_do]
    per_category: 1"""
ARGS = ["matrix", "run", "matrix/replicas.yaml", "--profile", "cpu-1t"]


def replicas_matrix() -> str:
    """SmolLM2 on the cpu-1t profile, ungated: at one thread its 64-token gate reply is cut
    mid-string, and the gate is not what this test is about."""
    text = e2e_matrix(FOUR).replace("profiles: [cpu]", "profiles: [cpu-1t]")
    text = text.replace("latency_gate: {warmup: true, attempts: 3, required: 2}", "latency_gate: {enabled: false}")
    assert "cpu-1t" in text and "enabled: false" in text
    return text


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_snapshot(tmp_path_factory.mktemp("replicas") / "project", {"matrix/replicas.yaml": replicas_matrix()})


def latest(project: Path, out: str) -> Path:
    return project / out / (project / out / "LATEST").read_text().strip()


def test_two_replicas_give_the_serial_runs_transcripts(project, canary_home, harness_image_ref, llama_image_ref):
    serial = run_repro(project, canary_home, *ARGS, "--out", "results/serial")
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-3000:]
    replicas = run_repro(project, canary_home, *ARGS, "--replicas", "2", "--out", "results/replicas")
    assert replicas.returncode == 0, replicas.stdout[-3000:] + replicas.stderr[-3000:]
    assert "2 replica(s) per group, 2 harness worker(s) per cell" in replicas.stdout
    serial_dir, replicas_dir = latest(project, "results/serial"), latest(project, "results/replicas")
    assert repro_containers(serial_dir.name) == [] and repro_containers(replicas_dir.name) == []
    (name, cell_dir), (_, serial_cell) = (
        next(iter(cells_of(replicas_dir).items())),
        next(iter(cells_of(serial_dir).items())),
    )
    record = load_cell(cell_dir)
    assert record.execution is not None and (
        record.execution.replicas,
        record.execution.workers,
        record.execution.threads,
    ) == (2, 2, 1)
    assert record.engine_audit is not None and record.engine_audit.escapes() == []
    assert outcome(cell_dir) == outcome(serial_cell), name
    assert read_regular(cell_dir / "engine.log", 1 << 26).count(b"n_threads = 1") == 2
    assert b"--- worker 2 of 2 ---" in read_regular(cell_dir / "harness.log", 1 << 26)
    assert run_repro(project, canary_home, "check", str(replicas_dir)).returncode == 0


def test_more_replicas_than_the_cores_hold_is_refused(project, canary_home, harness_image_ref, llama_image_ref):
    import os

    too_many = str((os.cpu_count() or 1) + 1)
    proc = run_repro(project, canary_home, *ARGS, "--replicas", too_many, "--out", "results/refused")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--replicas {too_many}: 1 thread(s) per engine on" in proc.stderr + proc.stdout
    assert not (project / "results" / "refused").exists() or not any((project / "results" / "refused").iterdir())
