"""A rerun as the facts a claim is compared on: its VALID rows (as `repro paper render` builds
them), each with its harness pin, decoding, accelerator and profile tolerance, and what its plans
hold that did not become a row (for NOT RERUN); or the rows of a published results.json."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import RunRecord
from repro.bundle.setup import SetupRecord, TemplatePin
from repro.core.errors import BadInput
from repro.plan.planner import Cell, make_plan
from repro.report.aggregate import ValidCell, collect_with_cells
from repro.report.tables import PaperTables, TableRow
from repro.spec.harnesses import HarnessPin
from repro.spec.loading import load_matrix
from repro.spec.matrix import Decoding
from repro.spec.tolerance import Tolerance
from repro.suites.registry import kind_of
from repro.verify.published import load_published


class RerunRow(BaseModel):
    """A VALID rerun row with what a claim is compared on beside its table row."""

    row: TableRow
    harness: HarnessPin
    decoding: Decoding
    accelerator: str | None = None
    profile_tolerance: Tolerance | None = None

    def pins(self) -> SetupRecord:
        return row_pins(self.row, self.decoding, self.harness, self.accelerator)


class Rerun(BaseModel):
    """The rerun's rows, and what its plans hold that did not become a row (for NOT RERUN)."""

    rows: list[RerunRow]
    planned: list[Cell] = []  # every cell of every run's plan, runnable and excluded
    reasons: dict[str, list[str]] = {}  # cell id -> why it is no row (excluded, invalid, absent)
    runs: list[str] = []


Collected = tuple[PaperTables, dict[str, list[ValidCell]]]  # what collect_with_cells gives


def load_rerun(paths: list[Path], collected: Collected | None = None) -> Rerun:
    """The VALID rows of the rerun (as `repro paper render` builds them), each with its facts;
    `collected` is collect_with_cells(paths) when the caller has it already (each bundle checked once)."""
    tables, cells = collected or collect_with_cells(paths)
    records: dict[str, RunRecord] = {}
    planned: list[Cell] = []
    for path in paths:
        for run_dir in find_runs(path):
            bundle = BundleReader(run_dir)
            record = bundle.run()
            records[record.run_id] = record
            planned += _plan_cells(bundle, record)
    rows = []
    for row in tables.rows:
        first = cells[row.key][0] if cells.get(row.key) else None
        if first is not None:
            run = records.get(first.run_id)
            harness = first.harness or kind_of(first.record.cell.suite).harness_pin(
                first.record.cell.suite, run.source if run else None
            )
            tolerance = run.profile_settings.tolerance if run else None
            rows.append(
                RerunRow(
                    row=row,
                    harness=harness,
                    decoding=first.record.cell.decoding,
                    accelerator=first.record.accelerator,
                    profile_tolerance=tolerance,
                )
            )
    return Rerun(rows=rows, planned=planned, reasons=_no_row_reasons(tables), runs=tables.runs)


def load_published_rows(path: Path, harness: HarnessPin | None = None, engine_kind: str | None = None) -> Rerun:
    """The rows of a results.json (no bundle at hand): what each row records of its harness and
    engine, else what the publisher states (`harness`, `engine_kind`); a row that records neither
    cannot be matched to a claim, and is refused in one line."""
    tables = load_published(path)
    return Rerun(
        rows=[published_row(row, harness, engine_kind) for row in tables.rows],
        reasons=_no_row_reasons(tables),
        runs=tables.runs,
    )


def published_row(row: TableRow, harness: HarnessPin | None = None, engine_kind: str | None = None) -> RerunRow:
    """A results.json row as facts: its decoding read back from its label (t=0 seed=42 max_tokens=384 ctx=4096)."""
    parts = dict(part.split("=", 1) for part in row.decoding.split() if "=" in part)
    try:
        decoding = Decoding(
            temperature=float(parts["t"]),
            seed=int(parts["seed"]),
            max_tokens=int(parts["max_tokens"]),
            context=int(parts["ctx"]),
        )
    except (KeyError, ValueError) as error:
        raise BadInput(
            f"row {row.key}: decoding '{row.decoding[:80]}' is not the label repro paper render writes ({error})"
        ) from None
    pin = row.harness or harness
    if pin is None:
        raise BadInput(
            f"row {row.key}: the results.json names no harness (an older repro wrote it): "
            "give the published bundle, or state --harness"
        )
    if row.engine_kind is None and engine_kind is not None:
        row = row.model_copy(update={"engine_kind": engine_kind})
    accelerator = row.hardware.accelerator if row.hardware else None
    return RerunRow(row=row, harness=pin, decoding=decoding, accelerator=accelerator)


def _plan_cells(bundle: BundleReader, record: RunRecord) -> list[Cell]:
    """The run's whole plan, recomputed from its embedded matrix (none when it cannot be: check
    has said why)."""
    try:
        loaded = load_matrix(bundle.matrix_path(), embedded=True)
        plan = make_plan(loaded, record.profile, record.profile_settings, templates=record.chat_templates)
    except BadInput:
        return []
    return plan.cells + plan.excluded


def _no_row_reasons(tables: PaperTables) -> dict[str, list[str]]:
    reasons: dict[str, list[str]] = {}
    for cell in tables.exclusions:
        reasons.setdefault(cell.cell_id, []).extend(
            f"{cell.verdict.lower()}: {reason}" for reason in cell.reasons or ["no reason recorded"]
        )
    for absent in tables.absent:
        reasons.setdefault(absent.cell_id, []).append(f"absent from this partial run: {absent.reason}")
    return reasons


def row_pins(
    row: TableRow, decoding: Decoding | None = None, harness: HarnessPin | None = None, accelerator: str | None = None
) -> SetupRecord:
    """What a row ran with, as the one comparison of setups reads it (repro.bundle.setup): a rerun's
    row against a claim, or (`repro compare`) one row against another. A row rendered by this repro
    carries its cells' setup record; of an older results.json's row, what it records (its decoding
    where only its label is at hand), and what it does not record is not stated."""
    if row.setup is not None:
        return row.setup.model_copy(update={"harness": harness or row.setup.harness})
    execution = row.execution
    template = (
        TemplatePin(source=row.chat_template.source, sha256=row.chat_template.sha256) if row.chat_template else None
    )
    return SetupRecord(
        quant=row.quant,
        file_size=row.file_size,
        chat_template=template,
        engine_kind=row.engine_kind,
        engine_build=row.engine_identity,
        engine_names=row.engine_names or [row.engine_identity, row.engine],
        engine_variant=row.engine_variant or ("cuda" if row.profile.startswith("gpu") else "cpu"),
        harness=harness or row.harness,
        runtime=row.runtime_pin,
        temperature=decoding.temperature if decoding else None,
        seed=decoding.seed if decoding else None,
        max_tokens=decoding.max_tokens if decoding else None,
        context=decoding.context if decoding else None,
        profile=row.profile,
        accelerator=accelerator,
        driver_version=row.hardware.driver_version if row.hardware else None,
        cpu_model=row.cpu_model,
        kernels=row.kernels,
        threads=execution.threads if execution else None,
        slots=execution.slots if execution else 1,
        cache_prompt=execution.cache_prompt if execution else False,
    )
