"""`repro check` of a whole bundle holding a ToolCallBench cell (its raw outputs from the
scripted backend through repro's driver; the rest of the record as a run writes it): VALID, and
INVALID once a raw result is tampered with, even with every hash made to agree."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from repro.bundle.layout.writer import Bundle
from repro.bundle.records import (
    EngineSettings,
    Execution,
    IdentityCheck,
    ImageInfo,
    MatrixInfo,
    RunRecord,
    SandboxRecord,
    SourceState,
    utc_now,
)
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.core.files import sha256_bytes
from repro.plan.planner import make_plan
from repro.spec.findings import GateResult
from repro.spec.profiles import load_profiles
from repro.suites.external.raw import RAW_INDEX
from tests.external.conftest import MATRIX, collect_cell, loaded, run_driver
from tests.external.test_toolcallbench import RAW_DB, rehash
from tests.fixtures.synthetic import (
    CANARY,
    CLEAN_AUDIT,
    ENGINE_SANDBOX,
    HARNESS_DIGEST,
    HARNESS_SANDBOX,
    gate_attempts,
    real_or_standin_templates,
    reported_template,
    synthetic_system,
)

TASKS = ["chain-01", "edit-01", "failure-01", "read-01", "run-01"]


def write_tcb_bundle(run_dir: Path, out: Path) -> Path:
    profiles = load_profiles()
    matrix = loaded()
    templates = real_or_standin_templates(matrix.matrix.models)
    (cell,) = make_plan(matrix, "cpu", profiles.get("cpu"), templates=templates).cells
    bundle = Bundle(run_dir, Redactor(CANARY))
    bundle.embed_matrix(MATRIX.read_bytes(), matrix.sha256)
    source = SourceState(commit="a" * 40, tree_clean=True, dirty_files=[], harness_digest=HARNESS_DIGEST)
    system = synthetic_system("cpu")
    run = RunRecord(
        run_id=run_dir.name,
        status="complete",
        matrix=MatrixInfo(path="matrix/toolcallbench-smoke.yaml", name=matrix.matrix.name, sha256=matrix.sha256),
        profile="cpu",
        profile_settings=profiles.get("cpu"),
        source=source,
        system=system,
        planned_cells=[cell.id],
        excluded_cells={},
        chat_templates=templates,
        started_at=utc_now(),
        finished_at=utc_now(),
    )
    bundle.write_run(run)
    assert cell.suite.external is not None
    lock = sha256_bytes((MATRIX.parents[1] / cell.suite.external.requirements.path).read_bytes())
    labels = {"repro.key": "k", "repro.harness_tree": HARNESS_DIGEST, "repro.external": "toolcallbench"}
    labels |= {"repro.external.wheel_sha256": cell.suite.external.sha256, "repro.external.requirements_sha256": lock}
    expected = cell.engine.expected_identity()
    collect_cell(
        run_dir,
        cell,
        [out],
        redactor=Redactor(CANARY),
        harness_image=ImageInfo(
            reference="repro/toolcallbench:k", id="sha256:" + "1" * 64, key="k", pinned_by="content-key", labels=labels
        ),
        engine_image=ImageInfo(
            reference="repro/llama-cpp:e",
            id="sha256:" + "2" * 64,
            key="e",
            pinned_by="content-key",
            labels={"repro.key": "e"},
        ),
        model_sha256_verified=cell.model.sha256,
        engine_identity=IdentityCheck(expected=expected, reported=expected, matched=True),
        engine_settings=EngineSettings(
            reported={**reported_template(templates[cell.model.id]), "build_info": expected, "total_slots": 1}
        ),
        sandbox=SandboxRecord(harness=HARNESS_SANDBOX, engine=ENGINE_SANDBOX),
        sandbox_audit=CLEAN_AUDIT,
        engine_audit=CLEAN_AUDIT,
        execution=Execution.of(profiles.get("cpu"), replicas=1),
        gate=GateResult(passed=True, reason="ok", attempts=gate_attempts(fast=True)),
    )
    engine_log(run_dir / "cells" / cell.id, profiles.get("cpu").threads)
    bundle.write_manifest()
    return run_dir


def engine_log(cell_dir: Path, threads: int | None) -> None:
    """The engine's log the run writes beside the results, and its hash in cell.json."""
    import json

    (cell_dir / "engine.log").write_text(f"llama threadpool init, n_threads = {threads}\n")
    record = json.loads((cell_dir / "cell.json").read_text())
    record["files"]["engine.log"] = sha256_bytes((cell_dir / "engine.log").read_bytes())
    (cell_dir / "cell.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def test_a_toolcallbench_bundle_checks_valid_and_a_tampered_raw_result_invalid(
    tmp_path: Path, tcb_python: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    run_driver(tcb_python, out, "bad_edit", TASKS)
    run_dir = write_tcb_bundle(tmp_path / "run1", out)
    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "VALID", verdict.reasons

    (cell_dir,) = (run_dir / "cells").iterdir()
    with sqlite3.connect(cell_dir / RAW_DB) as db:
        db.execute("UPDATE runs SET passed = 1, failure_type = 'ok' WHERE task_id = 'edit-01'")
    rehash(cell_dir, [RAW_DB])
    Bundle(run_dir, Redactor(CANARY)).write_manifest()  # every hash agrees: only the recomputations can tell
    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "INVALID"
    rules = {problem.rule for problem in verdict.problems}
    assert {"external-normalised", "external-rechecked", "external-report"} <= rules, verdict.reasons
    assert (cell_dir / RAW_INDEX).is_file()
