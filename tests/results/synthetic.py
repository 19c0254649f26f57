"""A synthetic bundle, written with the real Bundle writer, for validator and table tests.

It stands in for a real run only where the validator's rules are under test; the end-to-end
tests in tests/e2e check real bundles from real runs.
"""

from __future__ import annotations

from pathlib import Path

from harness.contracts import AUDIT_ITEMS, AuditItem, FailureType, SandboxAudit, ScenarioResult, TranscriptLine
from repro.bundle import Bundle
from repro.gate import GateResult
from repro.matrix import load_matrix
from repro.plan import make_plan
from repro.profiles import load_profiles
from repro.provenance import SourceState, SystemDescription
from repro.records import CellRecord, CellSummary, IdentityCheck, ImageInfo, MatrixInfo, RunRecord, SandboxRecord, utc_now
from repro.redact import HostIdentity, Redactor
from repro.sandbox import engine_settings, harness_settings

ROOT = Path(__file__).resolve().parents[2]
HARNESS_DIGEST = "d" * 64
CANARY = HostIdentity(project_root="/srv/canary-project", home="/home/canaryuser", cache="/home/canaryuser/.cache/repro", user="canaryuser", host="canaryhost")

HARNESS_SANDBOX = harness_settings(run_id="run1", cell_id="c", engine_id="abc")
ENGINE_SANDBOX = engine_settings(run_id="run1", cell_id=None, mem_limit=2**31, nano_cpus=2 * 10**9)


CLEAN_AUDIT = SandboxAudit(items=[AuditItem(name=name, attempted=True, blocked=True, detail="blocked") for name in AUDIT_ITEMS], uid=10001)


def result(scenario_id: str, category: str, passed: bool, failure_type: FailureType | None = None, engine_fault: bool = False) -> ScenarioResult:
    """A scenario result as the harness writes it (only the fields the rules read vary)."""
    return ScenarioResult(
        id=scenario_id,
        category=category,
        passed=passed,
        status="done" if passed else "failed",
        failure_type=None if passed else (failure_type or "wrong_outcome"),
        engine_fault=engine_fault,
        failed_checks=[],
        checks_total=1,
        steps=1,
        seconds=0.5,
        tokens_in=10,
        tokens_out=5,
        engine_timings=[],
        invalid_steps=0,
    )


def write_bundle(run_dir: Path, *, tree_clean: bool = True, identity_ok: bool = True, gate_passed: bool = True) -> Path:
    profiles = load_profiles()
    plan = make_plan(load_matrix(ROOT / "matrix" / "smoke.yaml"), "cpu", profiles.get("cpu"))
    bundle = Bundle(run_dir, Redactor(CANARY))
    record = RunRecord(
        run_id=run_dir.name,
        status="complete",
        matrix=MatrixInfo(path="matrix/smoke.yaml", name="smoke", sha256=plan.matrix_sha256),
        profile="cpu",
        profile_settings=profiles.get("cpu"),
        source=SourceState(commit="a" * 40, tree_clean=tree_clean, dirty_files=[] if tree_clean else ["repro/x.py"], harness_digest=HARNESS_DIGEST),
        system=SystemDescription(
            cpu_model="test cpu",
            cpu_cores=2,
            memory_gb=8,
            os="Debian",
            kernel="6",
            machine="x86_64",
            docker_engine="20",
            docker_api="1.41",
            storage_driver="overlay2",
        ),
        planned_cells=[c.id for c in plan.cells],
        excluded_cells={},
        started_at=utc_now(),
        finished_at=utc_now(),
    )
    bundle.write_run(record)
    for index, cell in enumerate(plan.cells):
        writer = bundle.start_cell(cell.id)
        rows = [result("injection-001", "injection", True), result("notes-001", "notes", index == 0), result("notes-002", "notes", False)]
        writer.write_jsonl("scenarios.jsonl", rows)
        leak = {"kind": "trigger", "text": "read /home/canaryuser/.cache/repro/x on canaryhost"}
        writer.write_jsonl("transcripts.jsonl", [TranscriptLine(id="notes-001", transcript=[leak])])
        writer.write_text("engine.log", "llama server listening\n")
        expected = cell.engine.expected_identity()
        writer.finish(
            CellRecord(
                cell=cell,
                status="done",
                harness_image=ImageInfo(
                    reference="repro/harness:k",
                    id="sha256:" + "1" * 64,
                    key="k",
                    pinned_by="content-key",
                    labels={"repro.key": "k", "repro.harness_tree": HARNESS_DIGEST},
                ),
                engine_image=ImageInfo(reference="repro/llama-cpp:e", id="sha256:" + "2" * 64, key="e", pinned_by="content-key", labels={"repro.key": "e"}),
                model_sha256_verified=cell.model.sha256,
                engine_identity=IdentityCheck(expected=expected, reported=expected if identity_ok else "b1-other", matched=identity_ok),
                sandbox=SandboxRecord(harness=HARNESS_SANDBOX, engine=ENGINE_SANDBOX),
                sandbox_audit=CLEAN_AUDIT,
                gate=GateResult(passed=gate_passed, reason="ok" if gate_passed else "too slow"),
                suite_ids=[r.id for r in rows],
                summary=CellSummary.of(rows),
            )
        )
    bundle.write_manifest()
    return run_dir
