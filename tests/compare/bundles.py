"""Synthetic bundles with chosen outcomes, transcripts and repeats, written with the real Bundle writer.

Built on tests/results/synthetic.py (same records, same clean-room evidence) so that `repro check`
calls every cell VALID; only what the statistics read varies: outcomes, failure types, transcripts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.contracts import ScenarioResult, TranscriptLine
from repro.bundle import Bundle
from repro.gate import GateResult
from repro.matrix import load_matrix
from repro.plan import Cell, make_plan
from repro.profiles import load_profiles
from repro.records import CellRecord, CellSummary, IdentityCheck, ImageInfo, MatrixInfo, RunRecord, SandboxRecord, utc_now
from repro.redact import Redactor
from tests.results.synthetic import CANARY, ENGINE_SANDBOX, HARNESS_DIGEST, HARNESS_SANDBOX, ROOT, result

# One scenario: (id, category, passed, failure type or None, transcript or None).
Scenario = tuple[str, str, bool, str | None, list[dict] | None]
Outcomes = Callable[[Cell], list[Scenario]]


def step(number: int, tool: str = "read_file", args: dict | None = None) -> dict:
    return {"kind": "step", "step": number, "agent": "main", "thought": "", "tool": tool, "args": args or {"path": "notes.md"}, "status": "ok", "result": "x"}


def transcript(*steps: dict) -> list[dict]:
    return [{"kind": "trigger", "agent": "main", "text": "do it"}, *steps, {"kind": "end", "status": "done", "stop": "finish", "detail": None}]


def write_bundle(run_dir: Path, outcomes: Outcomes, *, repeats: int = 1, models: int = 2) -> Path:
    """A complete, VALID bundle of the smoke matrix with `repeats` repeats and `outcomes(cell)` per cell."""
    loaded = load_matrix(ROOT / "matrix" / "smoke.yaml")
    matrix = loaded.matrix.model_copy(update={"repeats": repeats, "models": loaded.matrix.models[:models]})
    profiles = load_profiles()
    plan = make_plan(loaded.model_copy(update={"matrix": matrix}), "cpu", profiles.get("cpu"))
    bundle = Bundle(run_dir, Redactor(CANARY))
    bundle.write_run(run_record(run_dir.name, plan.matrix_sha256, [c.id for c in plan.cells]))
    for cell in plan.cells:
        write_cell(bundle, cell, outcomes(cell))
    bundle.write_manifest()
    return run_dir


def run_record(run_id: str, matrix_sha256: str, cells: list[str]) -> RunRecord:
    from repro.provenance import SourceState, SystemDescription

    system = SystemDescription(
        cpu_model="test cpu",
        cpu_cores=2,
        memory_gb=8,
        os="Debian",
        kernel="6",
        machine="x86_64",
        docker_engine="20",
        docker_api="1.41",
        storage_driver="overlay2",
    )
    return RunRecord(
        run_id=run_id,
        status="complete",
        matrix=MatrixInfo(path="matrix/smoke.yaml", name="smoke", sha256=matrix_sha256),
        profile="cpu",
        profile_settings=load_profiles().get("cpu"),
        source=SourceState(commit="a" * 40, tree_clean=True, dirty_files=[], harness_digest=HARNESS_DIGEST),
        system=system,
        planned_cells=cells,
        excluded_cells={},
        started_at=utc_now(),
        finished_at=utc_now(),
    )


def write_cell(bundle: Bundle, cell: Cell, scenarios: list[Scenario]) -> None:
    writer = bundle.start_cell(cell.id)
    rows: list[ScenarioResult] = [result(sid, category, passed, failure) for sid, category, passed, failure, _ in scenarios]  # type: ignore[arg-type]
    writer.write_jsonl("scenarios.jsonl", rows)
    writer.write_jsonl("transcripts.jsonl", [TranscriptLine(id=sid, transcript=t) for sid, _, _, _, t in scenarios if t is not None])
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
            engine_identity=IdentityCheck(expected=expected, reported=expected, matched=True),
            sandbox=SandboxRecord(harness=HARNESS_SANDBOX, engine=ENGINE_SANDBOX),
            gate=GateResult(passed=True, reason="ok"),
            suite_ids=[r.id for r in rows],
            summary=CellSummary.of(rows),
        )
    )
