"""verify --claims on real nondeterminism: the same cell published at one thread per engine and
rerun at two gives other transcripts (llama.cpp sums in another order), so verify says
CONSISTENT ON ANOTHER SETUP (exit 1) naming the threads, and with `--accept profile,threads`
CONSISTENT or DIFFERENT with the exact McNemar figures, never REPRODUCED; a rerun at one thread
again says REPRODUCED.

SmolLM2-135M on llama.cpp b11434, one scenario per workspace category (14), gate off (at one
thread its 64-token gate reply is cut mid-string; the gate is not what this test is about). Three
runs, one after another: about eight minutes on two cores. Set REPRO_TEST_FIGURES=FILE to keep
the verify output (the worked example of docs/methodology.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.conftest import e2e_matrix, make_snapshot, run_repro
from tests.e2e.test_run import repro_containers

pytestmark = [pytest.mark.docker, pytest.mark.engine, pytest.mark.reruns]
FOURTEEN = """\
  - id: workspace-14
    path: scenarios
    categories: [approval, ask, conflict, follow_up, handoff, injection, memory, notes, nothing_to_do, table_add, \
table_create, table_read_answer, table_update, web_research]
    per_category: 1"""


def threads_matrix() -> str:
    text = e2e_matrix(FOURTEEN).replace("profiles: [cpu]", "profiles: [cpu, cpu-1t]")
    text = text.replace("latency_gate: {warmup: true, attempts: 3, required: 2}", "latency_gate: {enabled: false}")
    assert "cpu-1t" in text and "enabled: false" in text
    return text


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_snapshot(
        tmp_path_factory.mktemp("claims-threads") / "project", {"matrix/threads.yaml": threads_matrix()}
    )


def run(project: Path, home: Path, out: str, *args: str) -> Path:
    proc = run_repro(project, home, "matrix", "run", "matrix/threads.yaml", "--out", out, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = project / out / (project / out / "LATEST").read_text().strip()
    assert repro_containers(run_dir.name) == []
    return run_dir


def verify(project: Path, home: Path, run_dir: Path, claims: Path, *extra: str) -> tuple[int, str, dict]:
    shown = run_repro(project, home, "verify", str(run_dir), "--claims", str(claims), *extra)
    as_json = run_repro(project, home, "verify", str(run_dir), "--claims", str(claims), "--json", *extra)
    assert as_json.returncode == shown.returncode, as_json.stderr
    return shown.returncode, shown.stdout, json.loads(as_json.stdout)


def test_another_thread_count_is_consistent_or_different_never_reproduced(
    project, canary_home, harness_image_ref, llama_image_ref
):
    published = run(project, canary_home, "results/one-thread", "--profile", "cpu-1t", "--replicas", "2")
    claims = project.parent / "threads-claims.yaml"  # outside the tree: the reruns must see it clean
    made = run_repro(
        project,
        canary_home,
        "claims",
        "from-results",
        str(published),
        "--citation",
        "a run at one thread",
        "--path",
        "matrix/threads.yaml",
        "--out",
        str(claims),
    )
    assert made.returncode == 0, made.stdout + made.stderr

    two = run(project, canary_home, "results/two-threads", "--profile", "cpu")
    code, text, report = verify(project, canary_home, two, claims)
    (claim,) = report["verdicts"]
    # another thread count, not accepted
    assert claim["verdict"] in ("CONSISTENT ON ANOTHER SETUP", "DIFFERENT") and code == 1, text
    assert claim["setup"] == "differs: profile, threads", text
    code, text, report = verify(project, canary_home, two, claims, "--accept", "profile,threads")
    (claim,) = report["verdicts"]
    assert claim["verdict"] in ("CONSISTENT", "DIFFERENT"), text
    assert code == (0 if claim["verdict"] == "CONSISTENT" else 1)
    identity, judgement = claim["transcripts"], claim["judgement"]
    assert identity["compared"] == 14 and identity["identical"] < 14, text
    assert judgement["test"] == "mcnemar" and judgement["pairs"] == 14 and 0 < judgement["p_value"] <= 1
    assert "exact McNemar p = " in text and "threads per engine differs: 1 claimed, 2 rerun" in text

    again = run(project, canary_home, "results/one-thread-again", "--profile", "cpu-1t", "--replicas", "2")
    code_again, text_again, report_again = verify(project, canary_home, again, claims)
    assert code_again == 0 and [v["verdict"] for v in report_again["verdicts"]] == ["REPRODUCED"], text_again
    assert "identical transcripts 14 of 14" in text_again

    figures = os.environ.get("REPRO_TEST_FIGURES")
    if figures:
        Path(figures).write_text(f"== two threads ==\n{text}\n== one thread again ==\n{text_again}\n")
