"""Result bundles: `results/<run-id>/` with run.json, one folder per cell and MANIFEST.sha256.

Every file is redacted and written atomically (temp file, then rename). A cell is written into
`cells/.<id>.partial/` and renamed to `cells/<id>/` only once complete, so an interrupted run
never leaves a half cell; `cell.json` (written last inside the cell) lists the sha256 of the
cell's other files, which is how `--resume` knows a cell is complete and intact.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from repro.plan import Cell
from repro.provenance import SourceState, SystemDescription
from repro.redact import Redactor

MANIFEST = "MANIFEST.sha256"
CELL_FILES = ("scenarios.jsonl", "transcripts.jsonl", "engine.log", "harness.log")


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ImageInfo(BaseModel):
    reference: str
    id: str
    key: str | None = None
    pinned_by: Literal["content-key", "digest"]
    labels: dict[str, str] = {}


class IdentityCheck(BaseModel):
    expected: str
    reported: str | None
    matched: bool


class CellSummary(BaseModel):
    passed: int
    total: int
    by_category: dict[str, tuple[int, int]]
    engine_faults: int = 0
    failure_types: dict[str, int] = {}


class CellRecord(BaseModel):
    cell: Cell
    status: Literal["done", "excluded", "error"]
    reason: str | None = None
    harness_image: ImageInfo | None = None
    engine_image: ImageInfo | None = None
    model_sha256_verified: str | None = None
    engine_identity: IdentityCheck | None = None
    engine_settings: dict[str, Any] = {}
    accelerator: str | None = None
    sandbox: dict[str, Any] = {}
    gate: dict[str, Any] | None = None
    suite_ids: list[str] = []
    suite_sha256: str | None = None
    summary: CellSummary | None = None
    files: dict[str, str] = {}
    started_at: str | None = None
    finished_at: str | None = None


class MatrixInfo(BaseModel):
    path: str
    name: str
    sha256: str


class RunRecord(BaseModel):
    run_id: str
    status: Literal["running", "complete", "interrupted", "failed"]
    matrix: MatrixInfo
    profile: str
    profile_settings: dict[str, Any]
    source: SourceState
    system: SystemDescription
    planned_cells: list[str]
    excluded_cells: dict[str, str]
    shard: str | None = None
    started_at: str
    finished_at: str | None = None
    leaked_containers: list[str] = []


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def to_json(model: BaseModel | dict | list) -> str:
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else model
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


class Bundle:
    """Writes one run's bundle; every byte passes through the redactor."""

    def __init__(self, run_dir: Path, redactor: Redactor) -> None:
        self.dir = run_dir
        self.redactor = redactor
        (run_dir / "cells").mkdir(parents=True, exist_ok=True)

    def write_text(self, relative: str, text: str) -> str:
        data = self.redactor.text(text).encode()
        atomic_write(self.dir / relative, data)
        return sha256_bytes(data)

    def write_run(self, record: RunRecord) -> None:
        self.write_text("run.json", to_json(record))

    def cell_dir(self, cell_id: str) -> Path:
        return self.dir / "cells" / cell_id

    def start_cell(self, cell_id: str) -> CellWriter:
        partial = self.dir / "cells" / f".{cell_id}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        return CellWriter(self, cell_id, partial)

    def cell_is_complete(self, cell_id: str) -> bool:
        return not verify_cell(self.cell_dir(cell_id))

    def write_manifest(self) -> None:
        lines = [f"{sha256_file(path)}  {path.relative_to(self.dir).as_posix()}" for path in bundle_files(self.dir)]
        atomic_write(self.dir / MANIFEST, ("\n".join(lines) + "\n").encode())


class CellWriter:
    def __init__(self, bundle: Bundle, cell_id: str, partial: Path) -> None:
        self.bundle = bundle
        self.cell_id = cell_id
        self.partial = partial
        self.files: dict[str, str] = {}

    def write_text(self, name: str, text: str) -> None:
        data = self.bundle.redactor.text(text).encode()
        atomic_write(self.partial / name, data)
        self.files[name] = sha256_bytes(data)

    def write_jsonl(self, name: str, rows: list[dict]) -> None:
        self.write_text(name, "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))

    def finish(self, record: CellRecord) -> CellRecord:
        """Write cell.json last, then move the whole cell into place in one rename."""
        record = record.model_copy(update={"files": dict(sorted(self.files.items()))})
        atomic_write(self.partial / "cell.json", self.bundle.redactor.text(to_json(record)).encode())
        final = self.bundle.cell_dir(self.cell_id)
        if final.exists():
            shutil.rmtree(final)
        os.replace(self.partial, final)
        return record

    def discard(self) -> None:
        shutil.rmtree(self.partial, ignore_errors=True)


def bundle_files(run_dir: Path) -> list[Path]:
    """Every file of a bundle, except the manifest itself and partial (unfinished) cells."""
    files = []
    for path in sorted(run_dir.rglob("*")):
        relative = path.relative_to(run_dir)
        if not path.is_file() or relative.as_posix() == MANIFEST:
            continue
        if any(part.startswith(".") for part in relative.parts):
            continue
        files.append(path)
    return files


def load_cell(cell_dir: Path) -> CellRecord:
    return CellRecord.model_validate_json((cell_dir / "cell.json").read_text())


def verify_cell(cell_dir: Path) -> list[str]:
    """Why a cell folder is not complete and intact (empty when it is)."""
    if not (cell_dir / "cell.json").is_file():
        return ["cell.json missing"]
    try:
        record = load_cell(cell_dir)
    except ValueError as error:
        return [f"cell.json unreadable: {str(error).splitlines()[0]}"]
    problems = []
    for name, digest in record.files.items():
        path = cell_dir / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name} sha256 differs from cell.json")
    return problems


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latest_run(results_dir: Path) -> Path:
    """The run named in results/LATEST, else the results folder itself."""
    pointer = results_dir / "LATEST"
    if pointer.is_file():
        return results_dir / pointer.read_text().strip()
    return results_dir


def mark_latest(results_dir: Path, run_dir: Path) -> None:
    atomic_write(results_dir / "LATEST", (run_dir.name + "\n").encode())


def summarize(rows: list[dict]) -> CellSummary:
    """Pass counts per category, failure types, and engine faults counted apart."""
    by_category: dict[str, list[int]] = {}
    failure_types: dict[str, int] = {}
    for row in rows:
        counts = by_category.setdefault(row["category"], [0, 0])
        counts[0] += bool(row.get("passed"))
        counts[1] += 1
        if not row.get("passed"):
            kind = row.get("failure_type") or "unknown"
            failure_types[kind] = failure_types.get(kind, 0) + 1
    return CellSummary(
        passed=sum(bool(r.get("passed")) for r in rows),
        total=len(rows),
        by_category={k: (v[0], v[1]) for k, v in sorted(by_category.items())},
        engine_faults=sum(bool(r.get("engine_fault")) for r in rows),
        failure_types=dict(sorted(failure_types.items())),
    )
