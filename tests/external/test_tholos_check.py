"""`repro check` of a whole bundle holding a Tholos cell (its raw outputs from repro's driver
against the scripted engine; the rest of the record as a run writes it): VALID, and INVALID once
a raw result is tampered with, even with every hash made to agree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.testing.scripted_engine import ScriptedEngine
from repro.bundle.layout.names import INPUTS_DIR
from repro.bundle.layout.writer import Bundle
from repro.bundle.provenance import SourceState, SystemDescription
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
from repro.check.verdict import CellVerdict, check_run
from repro.core.files import sha256_bytes
from repro.engines.gate import GateResult
from repro.plan.planner import make_plan
from repro.spec.profiles import load_profiles
from repro.store.sources import MIRROR_ENV
from repro.suites.registry import kind_of
from tests.external.conftest import collect_cell
from tests.external.test_toolcallbench import rehash
from tests.external.test_toolcallbench_check import engine_log
from tests.external.tholos_support import MATRIX, loaded, run_driver
from tests.external.tholos_support import tholos_sources as tholos_sources  # noqa: F401  (the fixture)
from tests.fixtures.synthetic import (
    CANARY,
    CLEAN_AUDIT,
    ENGINE_SANDBOX,
    HARNESS_DIGEST,
    HARNESS_SANDBOX,
    gate_attempts,
    real_or_standin_templates,
    reported_template,
)

RAW_RESULTS = "raw.results.jsonl"


def write_tholos_bundle(run_dir: Path, out: Path) -> Path:
    """A run of matrix/tholos.yaml whose one planned cell is the runner's, from the driver's `out`."""
    profiles = load_profiles()
    matrix = loaded()
    templates = real_or_standin_templates(matrix.matrix.models)
    cell = next(
        c
        for c in make_plan(matrix, "cpu", profiles.get("cpu"), templates=templates).cells
        if c.suite.external is not None
    )
    bundle = Bundle(run_dir, Redactor(CANARY))
    bundle.embed_matrix(MATRIX.read_bytes(), matrix.sha256)
    source = SourceState(commit="a" * 40, tree_clean=True, dirty_files=[], harness_digest=HARNESS_DIGEST)
    system = SystemDescription(
        cpu_model="cpu",
        cpu_cores=2,
        memory_gb=8,
        os="Debian",
        kernel="6",
        machine="x86_64",
        docker_engine="20",
        docker_api="1.41",
        storage_driver="overlay2",
    )
    run = RunRecord(
        run_id=run_dir.name,
        status="complete",
        matrix=MatrixInfo(path="matrix/tholos.yaml", name=matrix.matrix.name, sha256=matrix.sha256),
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
    lock = sha256_bytes((MATRIX.parents[1] / cell.suite.external.requirements.path).read_bytes())
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
        execution=kind_of(cell.suite).execution(cell, Execution.of(profiles.get("cpu"), replicas=1)),
        gate=GateResult(passed=True, reason="ok", attempts=gate_attempts(fast=True)),
    )
    engine_log(run_dir / "cells" / cell.id, profiles.get("cpu").threads)
    bundle.write_manifest()
    return run_dir


def test_a_tholos_bundle_checks_valid_and_a_tampered_raw_result_invalid(tholos_sources, tmp_path: Path) -> None:
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


def rewrite_input(run_dir: Path, data: bytes | None) -> None:
    """The carried archive replaced by `data` (None: removed), the manifest made to agree."""
    (carried,) = (run_dir / INPUTS_DIR).iterdir()
    if data is None:
        shutil.rmtree(run_dir / INPUTS_DIR)
    else:
        carried.write_bytes(data)
    Bundle(run_dir, Redactor(CANARY)).write_manifest()


def test_a_bundle_carries_the_runner_archive_and_checks_from_it_with_nothing_fetched(
    tholos_sources, tmp_path: Path, monkeypatch, capsys
) -> None:
    """VALID from the carried copy with an empty cache and no mirror; INVALID when the copy is other
    bytes (every hash agreeing); UNCHECKED, exit 3, with neither copy nor cache, never INVALID."""
    from repro.__main__ import main
    from repro.report.aggregate import collect

    code_root, scenarios = tholos_sources
    out = tmp_path / "out"
    out.mkdir()
    with ScriptedEngine(scenarios) as engine:
        run_driver(code_root, scenarios, out, loaded_ids(scenarios), engine.base_url)
    run_dir = write_tholos_bundle(tmp_path / "run", out)
    pin = loaded().matrix.suites[1].external
    assert pin is not None and pin.carried
    # the archive, carried as it is
    assert sha256_bytes((run_dir / INPUTS_DIR / f"{pin.sha256}.tar.gz").read_bytes()) == pin.sha256
    monkeypatch.delenv(MIRROR_ENV, raising=False)

    def checked(run: Path) -> CellVerdict:
        # a fresh machine: nothing fetched
        monkeypatch.setenv("REPRO_CACHE", str(tmp_path / f"empty-cache-{run.parent.name}"))
        (verdict,) = check_run(run, Redactor(CANARY)).cells
        return verdict

    assert checked(run_dir).verdict == "VALID", checked(run_dir).reasons

    wrong = shutil.copytree(run_dir, tmp_path / "wrong" / run_dir.name)
    rewrite_input(wrong, b"\x1f\x8b" + b"0" * 100)
    verdict = checked(wrong)
    assert verdict.verdict == "INVALID" and {p.rule for p in verdict.problems} >= {"carried-inputs"}, verdict.reasons

    bare = shutil.copytree(run_dir, tmp_path / "bare" / run_dir.name)
    rewrite_input(bare, None)
    verdict = checked(bare)
    assert verdict.verdict == "UNCHECKED" and not verdict.problems, verdict.reasons
    assert "REPRO_SOURCE_MIRROR=DIR repro check" in verdict.reasons[0]
    assert main(["check", str(bare)]) == 3
    assert "1 UNCHECKED" in capsys.readouterr().out
    tables = collect([bare])
    assert not tables.rows and [(e.verdict, e.cell_id) for e in tables.exclusions] == [("UNCHECKED", verdict.cell_id)]
    assert tables.setup.runs[0].verdicts == {"VALID": 0, "EXCLUDED": 0, "INVALID": 0, "UNCHECKED": 1}
