"""An author's own benchmark without a fork, end to end: a matrix, its profiles file and two
scenarios in the author's git repository outside the project, run on SmolLM2 by the real engine
from a clean snapshot of the project, checked VALID against the author's repository at its commit."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from repro.spec.profiles import load_profiles
from tests.e2e.conftest import E2E_MATRIX, ROOT, run_repro, smoke_parts

pytestmark = [pytest.mark.docker, pytest.mark.engine]

GIT = ["git", "-c", "user.name=author", "-c", "user.email=author@paper.invalid"]
SCENARIOS = ["nothing_to_do-001", "notes-001"]
OWN_SUITE = """\
  - id: mine
    path: scenarios"""


def author_repository(repo: Path) -> Path:
    """paper/bench/: bench.yaml (paths_from: matrix), profiles.yaml (author-cpu), scenarios/, fixtures/."""
    bench = repo / "bench"
    for scenario_id in SCENARIOS:
        source = next(ROOT.glob(f"scenarios/*/{scenario_id}.json"))
        (bench / "scenarios" / source.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, bench / "scenarios" / source.parent.name / source.name)
    shutil.copytree(ROOT / "fixtures", bench / "fixtures")
    cpu = load_profiles().get("cpu").model_dump(mode="json")
    (bench / "profiles.yaml").write_text(
        yaml.safe_dump({"profiles": {"author-cpu": {**cpu, "description": "The author's machine."}}})
    )
    models, engines = smoke_parts()
    text = E2E_MATRIX.format(model=models, engine=engines, suites=OWN_SUITE).replace(
        "profiles: [cpu]", "profiles: [author-cpu]"
    )
    (bench / "bench.yaml").write_text(text + "paths_from: matrix\nprofiles_file: profiles.yaml\n")
    (repo / ".gitignore").write_text("results/\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "my benchmark"], cwd=repo, check=True)
    return repo


def test_an_author_matrix_outside_the_project_runs_and_checks_valid(
    tmp_path, snapshot, canary_home, harness_image_ref, llama_image_ref
) -> None:
    repo = author_repository(tmp_path / "paper")
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    matrix = str(repo / "bench" / "bench.yaml")
    plan = run_repro(snapshot, canary_home, "matrix", "plan", matrix, "--profile", "author-cpu")
    assert plan.returncode == 0 and "1 cells run" in plan.stdout, plan.stdout + plan.stderr
    proc = run_repro(
        snapshot, canary_home, "matrix", "run", matrix, "--profile", "author-cpu", "--out", str(repo / "results")
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = repo / "results" / (repo / "results" / "LATEST").read_text().strip()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["matrix"]["path"] == "bench.yaml"
    assert {k: record["author"][k] for k in ("folder", "commit", "tree_clean")} == {
        "folder": "bench",
        "commit": commit,
        "tree_clean": True,
    }
    assert record["profile_settings"]["description"] == "The author's machine."
    assert (run_dir / "author-profiles.yaml").read_bytes() == (repo / "bench" / "profiles.yaml").read_bytes()
    (cell,) = record["planned_cells"]
    assert json.loads((run_dir / "cells" / cell / "cell.json").read_text())["suite_ids"] == sorted(SCENARIOS)
    alone = run_repro(snapshot, canary_home, "check", str(run_dir))
    assert alone.returncode == 0 and "embedded copies only: author repository not given" in alone.stdout, (
        alone.stdout + alone.stderr
    )
    check = run_repro(snapshot, canary_home, "check", str(run_dir), "--source", str(repo))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    assert f"compared with {repo} at {commit[:12]}" in check.stdout.replace("\n", ""), check.stdout
