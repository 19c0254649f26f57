"""A dirty project tree is named by `matrix plan`, `doctor` and `matrix run`, and `matrix run`
refuses it before anything starts (exit 2): on a committed snapshot of the project, as a reviewer's
clone, with files added after the commit. No engine: the refusal comes before any image, model or
Docker is asked for. What the bundle records of a run with --allow-dirty is tests/e2e/test_run.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import make_snapshot


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_snapshot(tmp_path_factory.mktemp("dirty") / "project")


def repro(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PYTHONPATH": str(project),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(project.parent),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "repro", *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def test_ignored_models_and_results_leave_the_tree_clean(project):
    for name in ("models/mine.gguf", "results/LATEST", ".venv"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x\n")
    proc = repro(project, "matrix", "plan", "matrix/smoke.yaml", "--profile", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "dirty" not in proc.stdout


def test_plan_doctor_and_run_name_the_files_and_run_refuses(project):
    for index in range(7):
        (project / "matrix" / f"mine{index}.yaml").write_text("name: mine\n")
    try:
        plan = repro(project, "matrix", "plan", "matrix/smoke.yaml", "--profile", "cpu")
        assert plan.returncode == 0, plan.stderr
        warning = next(line for line in plan.stdout.splitlines() if line.startswith("warning"))
        assert (
            "the project tree is dirty (7 file(s): matrix/mine0.yaml, matrix/mine1.yaml" in warning
            and "and 2 more" in warning
        )

        doctor = repro(project, "doctor")
        line = next(line for line in doctor.stdout.splitlines() if "project tree" in line)
        assert line.startswith("WARN") and "matrix/mine0.yaml" in line

        run = repro(project, "matrix", "run", "matrix/smoke.yaml", "--profile", "cpu", "--out", "results")
        assert run.returncode == 2
        (message,) = run.stderr.strip().splitlines()
        assert "the project tree is dirty (7 file(s): matrix/mine0.yaml" in message and "--allow-dirty" in message
        assert not list((project / "results").glob("*/run.json"))  # no run folder was opened
    finally:
        for index in range(7):
            (project / "matrix" / f"mine{index}.yaml").unlink()


def test_a_clean_tree_is_said_so_by_doctor(project):
    doctor = repro(project, "doctor")
    line = next(line for line in doctor.stdout.splitlines() if "project tree" in line)
    assert line.startswith("OK") and "clean at commit" in line
