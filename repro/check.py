"""`repro check`: which cells of a bundle are clean-room, decided from the bundle alone.

A cell is VALID only when every rule holds; EXCLUDED when it was excluded with a recorded
reason (by the plan or the latency gate); INVALID otherwise, with every reason. Tables are
rendered from VALID cells only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.errors import BadInput
from repro.profiles import Profile
from repro.redact import Redactor, find_leaks
from repro.results import MANIFEST, CellRecord, RunRecord, bundle_files, load_cell, sha256_file, verify_cell
from repro.sandbox import SandboxSettings, hardening_problems

Verdict = Literal["VALID", "INVALID", "EXCLUDED"]
HEX64 = re.compile(r"^[0-9a-f]{64}$")


class CellVerdict(BaseModel):
    run_id: str
    cell_id: str
    verdict: Verdict
    reasons: list[str] = []


class RunVerdict(BaseModel):
    run_dir: str
    run_id: str
    cells: list[CellVerdict]
    run_reasons: list[str] = []

    @property
    def invalid(self) -> list[CellVerdict]:
        return [cell for cell in self.cells if cell.verdict == "INVALID"]


def find_runs(path: Path) -> list[Path]:
    """A run folder, or a results folder holding run folders."""
    if (path / "run.json").is_file():
        return [path]
    runs = sorted(p for p in path.iterdir() if (p / "run.json").is_file()) if path.is_dir() else []
    if not runs:
        raise BadInput(f"{path}: no result bundle here (no run.json)")
    return runs


def check_run(run_dir: Path, redactor: Redactor | None = None) -> RunVerdict:
    redactor = redactor or Redactor()
    try:
        run = RunRecord.model_validate_json((run_dir / "run.json").read_text())
    except (OSError, ValueError) as error:
        raise BadInput(f"{run_dir}/run.json: unreadable ({str(error).splitlines()[0]})") from None
    tampered = manifest_problems(run_dir)
    run_reasons = run_level_problems(run) + [p for p in tampered if not p.startswith("cells/")]
    run_reasons += [f"host identity left in {line}" for line in run_json_leaks(run_dir, redactor)]
    verdicts = []
    for cell_id in run.planned_cells:
        reasons = run_reasons + [p for p in tampered if p.startswith(f"cells/{cell_id}/")]
        verdicts.append(check_cell(run, run_dir / "cells" / cell_id, cell_id, reasons, redactor))
    for cell_id, reason in run.excluded_cells.items():
        verdicts.append(CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[reason]))
    return RunVerdict(run_dir=str(run_dir), run_id=run.run_id, cells=verdicts, run_reasons=run_reasons)


def manifest_problems(run_dir: Path) -> list[str]:
    """Files whose sha256 differs from MANIFEST.sha256, and files the manifest does not list."""
    manifest = run_dir / MANIFEST
    if not manifest.is_file():
        return ["MANIFEST.sha256 missing (the run did not finish)"]
    listed: dict[str, str] = {}
    for line in manifest.read_text().splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = []
    present = {p.relative_to(run_dir).as_posix(): p for p in bundle_files(run_dir)}
    for name, digest in listed.items():
        if name not in present:
            problems.append(f"{name}: listed in the manifest but missing")
        elif sha256_file(present[name]) != digest:
            problems.append(f"{name}: sha256 differs from the manifest")
    problems += [f"{name}: not in the manifest" for name in present if name not in listed]
    return problems


def run_json_leaks(run_dir: Path, redactor: Redactor) -> list[str]:
    text = (run_dir / "run.json").read_text()
    return [f"run.json: {leak}" for leak in sorted(set(redactor.leaks(text)))]


def run_level_problems(run: RunRecord) -> list[str]:
    problems = []
    if not HEX64.match(run.matrix.sha256 or ""):
        problems.append("matrix file sha256 not recorded")
    if not run.source.commit:
        problems.append("project commit not recorded")
    if not run.source.tree_clean:
        problems.append(f"project tree was dirty at run time ({', '.join(run.source.dirty_files[:3]) or 'unknown files'})")
    if run.status != "complete":
        problems.append(f"run status is {run.status}, not complete")
    if run.leaked_containers:
        problems.append(f"containers left behind: {', '.join(run.leaked_containers)}")
    return problems


def check_cell(run: RunRecord, cell_dir: Path, cell_id: str, reasons: list[str], redactor: Redactor) -> CellVerdict:
    reasons = list(reasons)
    if not cell_dir.is_dir():
        return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict="INVALID", reasons=reasons + ["cell missing from the bundle"])
    integrity = verify_cell(cell_dir)
    reasons += [f"cells/{cell_id}: {problem}" for problem in integrity]
    try:
        record = load_cell(cell_dir)
    except (OSError, ValueError):
        return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict="INVALID", reasons=reasons)
    reasons += cell_rules(run, record)
    reasons += [f"host identity left in cells/{cell_id}/{line}" for line in find_leaks(cell_dir, redactor)][:5]
    if record.status == "excluded" and not reasons:
        return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict="EXCLUDED", reasons=[record.reason or "excluded"])
    verdict: Verdict = "VALID" if not reasons else "INVALID"
    return CellVerdict(run_id=run.run_id, cell_id=cell_id, verdict=verdict, reasons=[r.strip() for r in reasons])


def cell_rules(run: RunRecord, record: CellRecord) -> list[str]:
    if record.status == "error":
        return [f"cell error: {record.reason}"]
    if record.status == "excluded":
        return [] if record.reason else ["excluded without a recorded reason"]
    return image_rules(run, record) + model_and_engine_rules(record) + sandbox_rules(record) + hardware_rules(run, record) + gate_rules(record)


def image_rules(run: RunRecord, record: CellRecord) -> list[str]:
    problems = []
    engine = record.engine_image
    if engine is None or not engine.id:
        problems.append("engine image id not recorded")
    elif engine.pinned_by == "digest" and "@sha256:" not in engine.reference:
        problems.append(f"engine image {engine.reference} is not pinned by digest")
    elif engine.pinned_by == "content-key" and not (engine.key and engine.labels.get("repro.key") == engine.key):
        problems.append("engine image content key not recorded on the image")
    harness = record.harness_image
    if harness is None or not harness.id:
        problems.append("harness image id not recorded")
    elif harness.labels.get("repro.harness_tree") != run.source.harness_digest:
        problems.append("harness image was not built from the recorded commit's harness source")
    return problems


def model_and_engine_rules(record: CellRecord) -> list[str]:
    problems = []
    if record.model_sha256_verified != record.cell.model.sha256:
        problems.append("model sha256 not verified against the pin")
    identity = record.engine_identity
    expected = record.cell.engine.expected_identity()
    if identity is None or not identity.matched or identity.reported != expected or identity.expected != expected:
        reported = identity.reported if identity else None
        problems.append(f"engine identity did not match the pin (expected {expected}, reported {reported})")
    return problems


def sandbox_rules(record: CellRecord) -> list[str]:
    """The hardening read back from Docker, checked against what each role requires."""
    problems = []
    for role in ("harness", "engine"):
        recorded = record.sandbox.get(role)
        if not recorded:
            problems.append(f"{role} sandbox settings not recorded")
            continue
        settings = SandboxSettings.model_validate(recorded)
        problems += [f"{role} sandbox: {problem}" for problem in hardening_problems(settings, role)]
    return problems


def hardware_rules(run: RunRecord, record: CellRecord) -> list[str]:
    if record.cell.profile != run.profile:
        return [f"cell planned for profile {record.cell.profile}, run on {run.profile}"]
    profile = Profile.model_validate(run.profile_settings)
    if not profile.accelerator_matches(record.accelerator):
        return [f"accelerator {record.accelerator!r} does not match profile {run.profile} ({profile.accelerator})"]
    return []


def gate_rules(record: CellRecord) -> list[str]:
    if record.summary is None:
        return ["no scenario summary recorded"]
    if record.summary.engine_faults:
        return [f"{record.summary.engine_faults} scenarios hit engine errors (not model failures; rerun the cell)"]
    gate = record.gate
    if gate is None:
        return ["latency gate result not recorded"]
    if not gate.get("passed"):
        return [f"latency gate failed but the cell was not excluded ({gate.get('reason')})"]
    return []
