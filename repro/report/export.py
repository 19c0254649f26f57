"""`repro export inspect`: what each exported log is made of, read from a bundle, and where it goes.

The bundle is read through BundleReader and judged by `repro check` first, so a log says its
cell's verdict; only VALID cells are exported unless INVALID or EXCLUDED ones are asked for, and
those are marked in the log's status, tags and file name (`<cell>.INVALID.eval`), never silently.
The export keeps every run's verdict, so the command names each cell it left out (`left_out`)
and exits as `repro check` would on them.
The export never writes into a bundle: an output folder inside a run folder (or a run folder
inside the place its logs would go) is refused before anything is read.

Building and writing the logs is repro.report.inspect_log's (the one module that imports
inspect_ai); this module does not need the extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.contracts import ScenarioResult, TranscriptEntry
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.names import MANIFEST, safe_id
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord, RunRecord
from repro.bundle.setup import SetupRecord
from repro.check.verdict import CellVerdict, RunVerdict, Verdict, check_run
from repro.core.errors import BadInput
from repro.core.files import MAX_MANIFEST_BYTES, read_regular, sha256_bytes
from repro.core.yamlsource import require_file_target, require_folder
from repro.plan.planner import Cell, make_plan
from repro.report.aggregate import record_setup, refuse_broken_merge
from repro.report.setup import signature_state
from repro.spec.loading import load_matrix
from repro.suites.registry import kind_of

EXTENSION = ".eval"
SCENARIOS = "scenarios.jsonl"


class CellLog(BaseModel):
    """Everything one cell's log is made from."""

    run: RunRecord
    record: CellRecord | None  # None for a cell the plan excluded (it never ran, it has no cell.json)
    spec: Cell | None = None  # the cell's settings: its record's, or the plan's for a cell the plan excluded
    setup: SetupRecord | None = None  # the cell's one setup record (repro.bundle.setup), as the tables' rows use
    cell_id: str
    verdict: CellVerdict
    results: list[ScenarioResult] = []
    transcripts: dict[str, list[TranscriptEntry]] = {}
    external_messages: dict[str, list[dict[str, Any]]] = {}  # scenario id -> the external suite's own messages
    manifest_sha256: str | None = None
    signature: str = "not signed"


class ExportedLog(BaseModel):
    """One log written: its run, cell, verdict, path, and its samples' pass count."""

    run_id: str
    cell_id: str
    verdict: Verdict
    path: str
    samples: int
    passed: int


class Export(BaseModel):
    """What an export wrote, and the verdict of every run it read (what it left out is theirs)."""

    logs: list[ExportedLog] = []
    verdicts: list[RunVerdict] = []

    def left_out(self, include: set[str]) -> list[str]:
        """One line per cell not written (its verdict, run and cell, and first reason, as `repro
        check` prints it), and per run whose check found a run-level problem and no cell."""
        lines = [
            f"INVALID {run.run_id}: {problem.rule}: {problem.text}"
            for run in self.verdicts
            if not run.cells
            for problem in run.run_problems[:1]
        ]
        return lines + [
            f"{cell.verdict} {run.run_id}/{cell.cell_id}: {first_reason(cell)}"
            for run in self.verdicts
            for cell in run.cells
            if cell.verdict not in include
        ]


def first_reason(cell: CellVerdict) -> str:
    """The cell's first reason, after its kind where it has one ("excluded by the matrix (author): ...")."""
    reason = cell.reasons[0] if cell.reasons else "no reason recorded"
    return f"{cell.kind_label}: {reason}" if cell.kind_label else reason


def log_name(cell_id: str, verdict: str, extension: str = EXTENSION) -> str:
    """`<cell>.eval` for a VALID cell; `<cell>.INVALID.eval` or `.EXCLUDED.eval` otherwise."""
    return safe_id(cell_id, "cell id") + ("" if verdict == "VALID" else f".{verdict}") + extension


def log_path(out: Path, run_id: str, cell_id: str, verdict: str = "VALID", extension: str = EXTENSION) -> Path:
    """Where the log of a run's cell lies under an export folder (report.html links to it)."""
    return out / safe_id(run_id, "run id") / log_name(cell_id, verdict, extension)


def refuse_into_bundle(out: Path, runs: list[Path]) -> None:
    """An export folder is never a bundle, in one, or above one where a run's logs would land in it."""
    require_folder(out, "export folder")
    target = out.resolve()
    for run in runs:
        bundle = run.resolve()
        logs = target / run.name
        if target.is_relative_to(bundle) or logs.is_relative_to(bundle) or bundle.is_relative_to(logs):
            raise BadInput(f"{out}: inside the bundle {run} (or where its logs would write into it); export elsewhere")


def cell_logs(bundle: BundleReader, verdict: RunVerdict, include: set[str]) -> Iterator[CellLog]:
    """The run's cells of the included verdicts, as `repro check` judged them, with what their logs
    hold (read through the reader that checked them: the last cell checked is parsed once, and one
    cell at a time is held)."""
    run_dir = bundle.dir
    run = bundle.run()
    manifest = (
        sha256_bytes(read_regular(run_dir / MANIFEST, MAX_MANIFEST_BYTES)) if (run_dir / MANIFEST).is_file() else None
    )
    signature = signature_state(run_dir)
    planned = plan_cells(bundle, run) if "EXCLUDED" in include else {}
    for cell in verdict.cells:
        if cell.verdict in include:
            log = read_cell(bundle, run, cell)
            spec = log.record.cell if log.record is not None else planned.get(cell.cell_id)
            yield log.model_copy(update={"spec": spec, "manifest_sha256": manifest, "signature": signature})


def plan_cells(bundle: BundleReader, run: RunRecord) -> dict[str, Cell]:
    """The plan's cells, runnable and excluded, recomputed from the embedded matrix as `repro
    check` does (a cell the plan excluded has no cell.json to say what it was); none when the
    plan does not recompute (check names why)."""
    try:
        plan = make_plan(
            load_matrix(bundle.matrix_path(), embedded=True),
            run.profile,
            run.profile_settings,
            templates=run.chat_templates,
        )
    except BadInput:
        return {}
    return {cell.id: cell for cell in plan.cells + plan.excluded}


def read_cell(bundle: BundleReader, run: RunRecord, verdict: CellVerdict) -> CellLog:
    """A VALID cell whole; an INVALID cell as far as it reads (its verdict says why the rest does not)."""
    cell_id = verdict.cell_id
    try:
        record = bundle.cell(cell_id) if bundle.has_cell(cell_id) else None
        results = bundle.results(cell_id) if record is not None and bundle.has_file(cell_id, SCENARIOS) else []
        transcripts = {line.id: line.transcript for line in bundle.transcripts(cell_id)} if results else {}
    except BadInput:
        if verdict.verdict == "VALID":
            raise
        record, results, transcripts = None, [], {}
    transcripts = {r.id: transcripts.get(r.id) or r.transcript or [] for r in results}
    external = external_messages(bundle, cell_id, record) if record is not None and results else {}
    return CellLog(
        run=run,
        record=record,
        setup=None if record is None else record_setup(run, record),
        cell_id=cell_id,
        verdict=verdict,
        results=results,
        transcripts=transcripts,
        external_messages=external,
    )


def external_messages(bundle: BundleReader, cell_id: str, record: CellRecord) -> dict[str, list[dict[str, Any]]]:
    """The suite's own messages per task where its harness records them (ToolCallBench's raw
    logs); none for our harness, or when the raw outputs do not read (the transcript's turns serve)."""
    return kind_of(record.cell.suite).messages(bundle, cell_id)


def export_runs(
    results: Path,
    out: Path,
    include: set[str],
    write: Callable[[CellLog, Path], Path | None],
    extension: str = EXTENSION,
) -> Export:
    """Every included cell of the runs under `results` written by `write` into `out/<run-id>/`
    (a merged folder only while it holds the whole split it recorded, as `paper render` asks),
    with every run's verdict."""
    refuse_broken_merge(results)
    runs = find_runs(results)
    refuse_into_bundle(out, runs)
    done = Export()
    for run_dir in runs:
        bundle = BundleReader(run_dir)
        verdict = check_run(run_dir, bundle=bundle)
        done.verdicts.append(verdict)
        done.logs += [write_log(cell, out, write, extension) for cell in cell_logs(bundle, verdict, include)]
    return done


def write_log(cell: CellLog, out: Path, write: Callable[[CellLog, Path], Path | None], extension: str) -> ExportedLog:
    """One cell written by `write` at its place under `out` (or where the writer put it)."""
    path = require_file_target(
        log_path(out, cell.run.run_id, cell.cell_id, cell.verdict.verdict, extension), "log file"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path = write(cell, path) or path  # a writer may place its file elsewhere under the run's folder
    return ExportedLog(
        run_id=cell.run.run_id,
        cell_id=cell.cell_id,
        verdict=cell.verdict.verdict,
        path=str(path),
        samples=len(cell.results),
        passed=sum(r.passed for r in cell.results),
    )
