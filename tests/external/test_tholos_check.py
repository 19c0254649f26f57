"""`repro check` of a whole bundle holding a Tholos runner cell, on the repro project's stand-in for
Tholos-Bench's runner (tests/standins/tholos_runner/, our own code; not Tholos-Bench's runner): its
raw outputs from repro's driver against the scripted engine, the rest of the record as a run writes
it. VALID, with the runner's scoring re-executed from the pinned archive; INVALID once a raw result
is tampered with, even with every hash made to agree; UNCHECKED, never INVALID, when the archive is
at hand nowhere, and VALID again from a mirror."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.testing.scripted_engine import ScriptedEngine
from repro.bundle.layout.names import INPUTS_DIR
from repro.bundle.layout.writer import Bundle
from repro.bundle.provenance import SourceState
from repro.bundle.records import (
    EngineSettings,
    Execution,
    IdentityCheck,
    ImageInfo,
    MatrixInfo,
    RunRecord,
    SandboxRecord,
    utc_now,
)
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.core.config import PROJECT_ROOT
from repro.core.files import sha256_bytes
from repro.engines.gate import GateResult
from repro.plan.planner import make_plan
from repro.spec.profiles import load_profiles
from repro.store.sources import MIRROR_ENV
from tests.external.conftest import collect_cell
from tests.external.test_toolcallbench import rehash
from tests.external.test_toolcallbench_check import engine_log
from tests.external.tholos_support import PEERS, STANDIN_MATRIX, loaded, pack_standin, run_driver
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

RAW_RESULTS = "raw.results.jsonl"


def write_tholos_bundle(run_dir: Path, out: Path) -> Path:
    """A run of tests/external/tholos-standin.yaml whose one planned cell is the runner's (the
    stand-in's), from the driver's `out`."""
    profiles = load_profiles()
    matrix = loaded()
    templates = real_or_standin_templates(matrix.matrix.models)
    cell = next(
        c
        for c in make_plan(matrix, "cpu", profiles.get("cpu"), templates=templates).cells
        if c.suite.external is not None
    )
    bundle = Bundle(run_dir, Redactor(CANARY))
    bundle.embed_matrix(STANDIN_MATRIX.read_bytes(), matrix.sha256)
    source = SourceState(commit="a" * 40, tree_clean=True, dirty_files=[], harness_digest=HARNESS_DIGEST)
    system = synthetic_system("cpu")
    run = RunRecord(
        run_id=run_dir.name,
        status="complete",
        matrix=MatrixInfo(path="tests/external/tholos-standin.yaml", name=matrix.matrix.name, sha256=matrix.sha256),
        profile="cpu",
        profile_settings=profiles.get("cpu"),
        source=source,
        system=system,
        planned_cells=[cell.id],
        excluded_cells={},
        chat_templates=templates,
        started_at=utc_now(),
        finished_at=utc_now(),
        only=[cell.id],  # the json_schema cell of the same matrix is not part of this test
    )
    bundle.write_run(run)
    assert cell.suite.external is not None
    lock = sha256_bytes((PROJECT_ROOT / cell.suite.external.requirements.path).read_bytes())
    labels = {"repro.key": "k", "repro.harness_tree": HARNESS_DIGEST, "repro.external": "tholos"}
    labels |= {"repro.external.wheel_sha256": cell.suite.external.sha256, "repro.external.requirements_sha256": lock}
    expected = cell.engine.expected_identity()
    collect_cell(
        run_dir,
        cell,
        [out],
        redactor=Redactor(CANARY),
        harness_image=ImageInfo(
            reference="repro/tholos:k", id="sha256:" + "1" * 64, key="k", pinned_by="content-key", labels=labels
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
        execution=Execution.of(profiles.get("cpu"), replicas=1, marks_scenarios=False),  # the runner: cache off
        gate=GateResult(passed=True, reason="ok", attempts=gate_attempts(fast=True)),
    )
    engine_log(run_dir / "cells" / cell.id, profiles.get("cpu").threads)
    bundle.write_manifest()
    return run_dir


def test_a_tholos_bundle_checks_valid_and_a_tampered_raw_result_invalid(tholos_sources, tmp_path: Path) -> None:
    """One scenario per category through the driver (the scripted engine's broken replies: every run
    fails): VALID; then a failed result turned into a pass, every hash made to agree: INVALID, the
    normalised records, the runner's re-executed scoring (the stand-in's `evaluate`, from its pinned
    archive) and its summary rendered again all disagreeing."""
    code_root, scenarios = tholos_sources
    ids = loaded_ids(scenarios)
    out = tmp_path / "out"
    out.mkdir()
    with ScriptedEngine(scenarios, fault="broken_json") as engine:
        run_driver(code_root, scenarios, out, ids, engine.base_url)
    run_dir = write_tholos_bundle(tmp_path / "run1", out)
    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "VALID", verdict.reasons

    (cell_dir,) = (run_dir / "cells").iterdir()
    lines = [json.loads(line) for line in (cell_dir / RAW_RESULTS).read_text().splitlines()]
    lines[0] |= {"passed": True, "failed_assertions": []}
    (cell_dir / RAW_RESULTS).write_text("".join(json.dumps(line) + "\n" for line in lines))
    rehash(cell_dir, [RAW_RESULTS])
    Bundle(run_dir, Redactor(CANARY)).write_manifest()  # every hash agrees: only the recomputations can tell
    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "INVALID"
    rules = {problem.rule for problem in verdict.problems}
    assert {"external-normalised", "external-rechecked", "external-report"} <= rules, verdict.reasons


def loaded_ids(scenarios: Path) -> list[str]:
    """The ids the matrix's runner suite selects (one per category), in suite order."""
    from repro.suites.registry import select

    suite = next(s for s in loaded().matrix.suites if s.external is not None)
    return select(suite).ids


def test_a_bundle_whose_runner_code_is_nowhere_at_hand_is_unchecked_and_valid_again_from_a_mirror(
    tholos_sources, tmp_path: Path, monkeypatch, capsys
) -> None:
    """The stand-in's archive is not one a bundle carries (HARNESSES carried_archives): with an empty
    cache and no mirror, the cell is UNCHECKED (exit 3) naming the mirror to set, never INVALID, and
    left out of the tables; with a mirror holding the archive (and the scenario files), VALID."""
    from repro.__main__ import main
    from repro.report.aggregate import collect

    code_root, scenarios = tholos_sources
    out = tmp_path / "out"
    out.mkdir()
    with ScriptedEngine(scenarios) as engine:
        run_driver(code_root, scenarios, out, loaded_ids(scenarios), engine.base_url)
    run_dir = write_tholos_bundle(tmp_path / "run", out)
    pin = loaded().matrix.suites[1].external
    assert pin is not None and not pin.carried
    assert not (run_dir / INPUTS_DIR).exists()  # nothing of the runner's code in the bundle
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))  # a fresh machine: nothing fetched

    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "UNCHECKED" and not verdict.problems, verdict.reasons
    assert MIRROR_ENV in verdict.reasons[0], verdict.reasons
    assert main(["check", str(run_dir)]) == 3
    assert "1 UNCHECKED" in capsys.readouterr().out
    tables = collect([run_dir])
    assert not tables.rows and [(e.verdict, e.cell_id) for e in tables.exclusions] == [("UNCHECKED", verdict.cell_id)]
    assert tables.setup.runs[0].verdicts == {"VALID": 0, "EXCLUDED": 0, "INVALID": 0, "UNCHECKED": 1}

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    pack_standin(mirror)
    monkeypatch.setenv(MIRROR_ENV, os.pathsep.join([str(mirror), str(PEERS / "tholos-bench")]))
    (verdict,) = check_run(run_dir, Redactor(CANARY)).cells
    assert verdict.verdict == "VALID", verdict.reasons
