"""The generated Slurm array, run for real: a single-node Slurm (munged, slurmctld, slurmd as root)
on this machine runs tests/scale/matrix.yaml in two shards through the real engine, the dependent
job merges, checks and renders, and the merged bundle is VALID with the same table as a
one-machine run of the same matrix. Skipped with the reason when Slurm is not installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import make_snapshot
from tests.scale.slurm_cluster import SlurmCluster, available

pytestmark = [pytest.mark.slurm, pytest.mark.engine, pytest.mark.docker]

MATRIX = "tests/scale/matrix.yaml"
JOB_TIMEOUT_S = 1800


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def project(
    tmp_path_factory, model_cache, smollm2_gguf, harness_image_ref, llama_image_ref
) -> tuple[Path, dict[str, str]]:
    """A committed snapshot of the tree (so the runs are clean) and the environment to run it in:
    a fresh home whose repro cache shares the session's verified model store."""
    snapshot = make_snapshot(tmp_path_factory.mktemp("snapshot") / "project")
    home = tmp_path_factory.mktemp("home")
    (home / ".cache" / "repro").mkdir(parents=True)
    (home / ".cache" / "repro" / "models").symlink_to(model_cache / "models", target_is_directory=True)
    keep = {k: v for k, v in os.environ.items() if k not in ("REPRO_CACHE", "XDG_CACHE_HOME")}
    return snapshot, {**keep, "HOME": str(home), "PYTHONPATH": str(snapshot), "COLUMNS": "160"}


def repro(project: Path, env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args], cwd=project, env=env, capture_output=True, text=True, timeout=timeout
    )


def job_logs(results: Path) -> str:
    logs = sorted((results / "logs").glob("*.out")) if (results / "logs").is_dir() else []
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-2500:]}" for path in logs)


def table_body(tables: Path) -> str:
    """results.md without its first line (it names the runs it was rendered from) and without
    "Where the time went" (seconds differ between any two runs; the outcomes may not)."""
    lines = (tables / "results.md").read_text().splitlines(keepends=True)[1:]
    kept, in_times = [], False
    for line in lines:
        if line.startswith("**"):
            in_times = line.startswith("**Where the time went**")
        if not in_times:
            kept.append(line)
    return "".join(kept)


def test_generated_array_runs_on_slurm_and_merges_valid(slurm_cluster, project, tmp_path):
    snapshot, env = project
    jobs, results = tmp_path / "jobs", tmp_path / "shared"
    repro_cmd = f"{sys.executable} -m repro"
    proc = repro(
        snapshot,
        env,
        "scale",
        "slurm",
        MATRIX,
        "--profile",
        "cpu",
        "--shards",
        "2",
        "--out",
        str(jobs),
        "--results",
        str(results),
        "--repro",
        repro_cmd,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    submitted = subprocess.run(
        [str(jobs / "submit.sh")],
        cwd=tmp_path,
        env={**slurm_cluster.env, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    ids = dict(re.findall(r"^(array_job|merge_job)=(\d+)$", submitted.stdout, re.MULTILINE))
    states = slurm_cluster.wait([ids["array_job"], ids["merge_job"]], JOB_TIMEOUT_S)
    assert set(states.values()) == {"COMPLETED"} and len(states) == 3, (
        f"{states}\n{job_logs(results)}\n{slurm_cluster.log('slurmctld')}"
    )

    check = repro(snapshot, env, "check", str(results / "merged"), "--json")
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    verdicts = json.loads(check.stdout)
    assert len(verdicts) == 2, "one bundle per shard"
    assert sorted(cell["verdict"] for run in verdicts for cell in run["cells"]) == ["VALID", "VALID"]
    assert {run["run_id"].rsplit("-", 1)[-1] for run in verdicts} == {"shard1of2", "shard2of2"}

    one_machine = repro(
        snapshot,
        env,
        "matrix",
        "run",
        MATRIX,
        "--profile",
        "cpu",
        "--out",
        str(tmp_path / "single"),
        timeout=JOB_TIMEOUT_S,
    )
    assert one_machine.returncode == 0, one_machine.stdout[-3000:] + one_machine.stderr[-2000:]
    rendered = repro(
        snapshot, env, "paper", "render", str(tmp_path / "single"), "--out", str(tmp_path / "single-tables")
    )
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    assert table_body(results / "tables") == table_body(tmp_path / "single-tables")
    assert "(no VALID cells)" not in table_body(results / "tables")
