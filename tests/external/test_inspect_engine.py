"""An inspect_ai task in the clean room: `repro matrix run` of tests/external/inspect.yaml (two
samples of AgentThreatBench's memory_poison task from the pinned inspect-evals wheel, run by
inspect_ai itself in its sealed image against the pinned llama.cpp build and the real
Qwen2.5-Coder-0.5B-Instruct GGUF) gives a VALID cell that keeps inspect's own log; `repro check`
re-runs the task's scorer on the log's samples in the sealed image, so a sample score changed in
the log (everything else made to agree) is INVALID, and so are changed normalised results; the
bundle reruns with identical transcripts. What the model scores is reported, never asserted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_cell, read_results
from repro.bundle.layout.writer import Bundle
from repro.bundle.redact import Redactor
from tests.e2e.conftest import make_snapshot, run_repro
from tests.external.test_inspect_bindings import rewrite_sample_answer
from tests.external.test_toolcallbench import rehash

pytestmark = [pytest.mark.docker, pytest.mark.engine]
MATRIX = "tests/external/inspect.yaml"


@pytest.fixture(scope="module")
def inspect_run(tmp_path_factory, canary_home, qwen_gguf, harness_image_ref, llama_image_ref) -> tuple[Path, Path]:
    project = make_snapshot(tmp_path_factory.mktemp("inspect") / "project")
    for step in (["suites", "fetch", MATRIX], ["images", "build", MATRIX, "--profile", "cpu", "--no-log"]):
        proc = run_repro(project, canary_home, *step)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_repro(
        project, canary_home, "matrix", "run", MATRIX, "--profile", "cpu", "--out", "results", timeout=3600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, project / "results" / (project / "results" / "LATEST").read_text().strip()


def the_cell(run_dir: Path) -> Path:
    (cell_dir,) = [p for p in (run_dir / "cells").iterdir() if p.is_dir()]
    return cell_dir


def the_log(cell_dir: Path) -> Path:
    (log,) = [p for p in cell_dir.iterdir() if p.name.startswith("raw.logs__") and p.name.endswith(".eval")]
    return log


def test_an_inspect_task_runs_sealed_and_checks_valid(inspect_run, canary_home) -> None:
    project, run_dir = inspect_run
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0 and "1 VALID" in check.stdout, check.stdout + check.stderr
    cell_dir = the_cell(run_dir)
    record = load_cell(cell_dir)
    results = read_results(cell_dir)
    assert [r.id for r in results] == ["mp_004", "mp_005"]
    assert {r.category for r in results} == {"agent_threat_bench_memory_poison"}
    assert record.harness_image is not None and record.harness_image.labels["repro.external"] == "inspect"
    assert record.sandbox.harness is not None and record.sandbox.harness.network_mode.startswith("container:")
    assert the_log(cell_dir).read_bytes()[:2] == b"PK"  # inspect's own .eval log, kept byte for byte
    print("inspect on the engine:", {r.id: (r.passed, r.failure_evidence) for r in results})


def flip_score(log_path: Path, sample_id: str) -> None:
    """Turn a sample's scores around in inspect's own log, written back by inspect's own writer."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_path))
    for sample in log.samples or []:
        if str(sample.id) == sample_id:
            for score in (sample.scores or {}).values():
                flipped = {"C": "I", "I": "C"}
                score.value = (
                    {k: flipped.get(v, v) for k, v in score.value.items()}
                    if isinstance(score.value, dict)
                    else flipped.get(score.value, score.value)
                )
    write_eval_log(log, str(log_path))


def agree_with_log(forged: Path, cell_dir: Path, log: Path) -> None:
    """What a forger does after editing the log: its hashes, scenarios.jsonl normalised from it
    again, and the manifest, all redone to agree."""
    from repro.suites.external.inspect_task import Inspect
    from repro.suites.external.raw import RawIndex

    rehash(cell_dir, [log.name])
    index = RawIndex.model_validate_json((cell_dir / "raw-index.json").read_text())
    raw = {entry.name: (cell_dir / entry.name).read_bytes() for entry in index.files if entry.kept}
    normalised = Inspect().normalise(raw, index, ["mp_004", "mp_005"], "native_tools")
    (cell_dir / "scenarios.jsonl").write_text(
        "".join(r.model_dump_json(exclude_none=False) + "\n" for r in normalised.results)
    )
    rehash(cell_dir, ["scenarios.jsonl"])
    Bundle(forged, Redactor()).write_manifest()


def test_a_sample_score_changed_in_the_log_is_invalid(inspect_run, canary_home, tmp_path: Path) -> None:
    """The forger's best: the log's score changed, the normalised results made to agree with it, every
    hash recomputed; only the scorer re-run in the sealed image can tell."""
    project, run_dir = inspect_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    cell_dir = the_cell(forged)
    log = the_log(cell_dir)
    flip_score(log, "mp_004")
    agree_with_log(forged, cell_dir, log)
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 1 and "INVALID" in check.stdout, check.stdout + check.stderr
    assert "its scorers re-run give" in check.stdout, check.stdout


def rewrite_answer(log_path: Path, sample_id: str, text: str) -> None:
    """A sample's final answer rewritten (its output and its last assistant message) and its scores
    made a pass, written back by inspect's own writer; its model events left as the engine answered."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_path))
    for sample in log.samples or []:
        if str(sample.id) == sample_id:
            rewrite_sample_answer(sample, text)
            for score in (sample.scores or {}).values():
                score.value = {k: "C" for k in score.value} if isinstance(score.value, dict) else "C"
    write_eval_log(log, str(log_path))


def test_a_rewritten_answer_is_invalid(inspect_run, canary_home, tmp_path: Path) -> None:
    """Issue 63's forgery: one sample's answer rewritten and its score made a pass, scenarios.jsonl,
    every sha256 and the manifest redone to agree. The log's own model event still holds the engine's
    reply, and harness.log still reports the sample's first outcome: both say so."""
    project, run_dir = inspect_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    cell_dir = the_cell(forged)
    log = the_log(cell_dir)
    was = {r.id: r.passed for r in read_results(cell_dir)}
    rewrite_answer(log, "mp_004", "I will not store or follow the injected instruction.")
    agree_with_log(forged, cell_dir, log)
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 1 and "INVALID" in check.stdout, check.stdout + check.stderr
    assert "its output is not what its last model call returned" in check.stdout, check.stdout
    if not was["mp_004"]:  # the harness reported it failed: its log says so still
        assert "harness.log reports scenario mp_004 failed" in check.stdout, check.stdout


def test_changed_normalised_results_are_invalid(inspect_run, canary_home, tmp_path: Path) -> None:
    project, run_dir = inspect_run
    forged = tmp_path / run_dir.name
    shutil.copytree(run_dir, forged)
    cell_dir = the_cell(forged)
    lines = [json.loads(line) for line in (cell_dir / "scenarios.jsonl").read_text().splitlines()]
    lines[0]["passed"] = not lines[0]["passed"]
    (cell_dir / "scenarios.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rehash(cell_dir, ["scenarios.jsonl"])
    Bundle(forged, Redactor()).write_manifest()
    check = run_repro(project, canary_home, "check", str(forged))
    assert check.returncode == 1 and "INVALID" in check.stdout, check.stdout + check.stderr


def test_the_bundle_reruns_with_identical_transcripts(inspect_run, canary_home, tmp_path: Path) -> None:
    project, run_dir = inspect_run
    rerun = run_repro(project, canary_home, "rerun", str(run_dir), "--out", str(tmp_path / "rerun"), timeout=3600)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert "2 of 2 transcripts identical" in rerun.stdout, rerun.stdout[-3000:]
