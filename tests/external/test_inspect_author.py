"""An author's own inspect task file, run from outside the project's tree: the author's repository
(a git repository in a temporary folder) holds a matrix with `paths_from: matrix` and their task
file (tests/external/author_inspect/bakery.py, the project's stand-in for an author's eval), whose
suite names it `task: bakery.py@bakery` on inspect-ai's own pinned wheel. `repro matrix run` runs it
sealed against the pinned llama.cpp build; the bundle carries the author's folder, and `repro
check --source` selects it again at the author's commit and re-runs the file's own scorer on the
log's samples in the sealed image. A carried task file changed after the run is INVALID; a log
whose scoring called a model is VALID with a note that its scores were taken on the log's word;
the bundle reruns with identical transcripts. What the model scores is reported, never asserted."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.test_inspect_engine import the_cell, the_log
from tests.external.test_toolcallbench import rehash

pytestmark = [pytest.mark.docker, pytest.mark.engine]
HERE = Path(__file__).parent
TASK_FILE = HERE / "author_inspect" / "bakery.py"
INSPECT_AI = {
    "wheel": "inspect-ai==0.3.285",
    "sha256": "4658e36773e9d78116a69a3eb066f47698aa7ea9fc1c0146927a86f02b455aa6",
}


def author_matrix() -> dict:
    """The author's matrix: the test matrix's model, engine and decoding, and one suite of their own task file."""
    matrix = yaml.safe_load((HERE / "inspect.yaml").read_text())
    external = {**matrix["suites"][0]["external"], **INSPECT_AI, "task": "bakery.py@bakery"}
    return {
        **matrix,
        "name": "bakery-inspect",
        "description": "The bakery's stock questions, an author's inspect task file.",
        "paths_from": "matrix",
        "suites": [{"id": "bakery-stock", "path": "evals", "external": external, "ids": ["rye", "wheat", "spelt"]}],
    }


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=author", "-c", "user.email=author@example.org", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def author_run(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, llama_image_ref) -> tuple[Path, Path, Path]:
    """The project's snapshot, the author's repository (outside it) and the run's bundle there."""
    project = make_snapshot(tmp_path_factory.mktemp("inspect-author") / "project")
    author = tmp_path_factory.mktemp("author-repo")
    (author / "evals").mkdir()
    shutil.copyfile(TASK_FILE, author / "evals" / "bakery.py")
    (author / "bench.yaml").write_text(yaml.safe_dump(author_matrix(), sort_keys=False))
    (author / ".gitignore").write_text("results/\n")
    git(author, "init", "-q", ".")
    git(author, "add", "-A")
    git(author, "commit", "-qm", "the bakery eval")
    matrix = str(author / "bench.yaml")
    for step in (["suites", "fetch", matrix], ["images", "build", matrix, "--profile", "cpu", "--no-log"]):
        proc = run_repro(project, canary_home, *step)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = author / "results"
    proc = run_repro(project, canary_home, "matrix", "run", matrix, "--profile", "cpu", "--out", str(out), timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, author, out / (out / "LATEST").read_text().strip()


def test_an_author_task_file_runs_and_checks_valid_at_their_commit(author_run, canary_home) -> None:
    from inspect_ai.log import read_eval_log

    project, author, run_dir = author_run
    check = run_repro(project, canary_home, "check", str(run_dir), "--source", str(author))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    assert "compared with" in check.stdout, check.stdout
    carried = run_dir / "suites" / "bakery-stock" / "scenarios" / "bakery.py"
    assert carried.read_bytes() == TASK_FILE.read_bytes()
    log = read_eval_log(str(the_log(the_cell(run_dir))), header_only=True)
    assert (log.eval.task, log.eval.task_file) == ("bakery", "/scenarios/bakery.py")
    assert [s.name for s in log.eval.scorers or []] == ["stock_answer"]


def test_a_carried_task_file_changed_after_the_run_is_invalid(author_run, canary_home, tmp_path: Path) -> None:
    project, _, run_dir = author_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    carried = forged / "suites" / "bakery-stock" / "scenarios" / "bakery.py"
    carried.write_text(carried.read_text().replace("asked and said", "True"))
    Bundle(forged, Redactor()).write_manifest()
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 1 and "INVALID" in check.stdout, check.stdout + check.stderr


def graded_by_a_model(log_path: Path) -> int:
    """Each sample's model call repeated inside its scoring span, as a model-graded scorer's would be;
    how many calls were added."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_path))
    for sample in log.samples or []:
        scoring = next(e.id for e in sample.events if e.event == "span_begin" and e.type == "scorers")
        call = next(e for e in sample.events if e.event == "model")
        sample.events.append(call.model_copy(update={"span_id": scoring}))
    write_eval_log(log, str(log_path))
    return len(log.samples or [])


def served(cell_dir: Path, calls: int) -> None:
    """The engine's log shows `calls` more requests served, as a scorer's calls on the cell's engine
    are (check holds the log to one request per model call)."""
    with (cell_dir / "engine.log").open("a") as log:
        for task in range(calls):
            log.write(f"srv  launch_slot_: id  0 | task {90000 + task} | processing task\n")


def test_a_model_graded_score_is_taken_on_the_logs_word_and_said(author_run, canary_home, tmp_path: Path) -> None:
    project, _, run_dir = author_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    cell_dir = the_cell(forged)
    log = the_log(cell_dir)
    served(cell_dir, graded_by_a_model(log))
    rehash(cell_dir, [log.name, "engine.log"])
    Bundle(forged, Redactor()).write_manifest()
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    assert "taken on the log's word" in check.stdout, check.stdout


def test_the_author_bundle_reruns_with_identical_transcripts(author_run, canary_home, tmp_path: Path) -> None:
    project, _, run_dir = author_run
    rerun = run_repro(project, canary_home, "rerun", str(run_dir), "--out", str(tmp_path / "rerun"), timeout=3600)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert "3 of 3 transcripts identical" in rerun.stdout, rerun.stdout[-3000:]
