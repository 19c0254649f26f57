"""Table rows from checked bundles: only VALID cells, only figures recomputed from the evidence.

A row is one combination of everything that can change a number: model bytes and quant, engine
identity, protocol, suite bytes, decoding and profile. Repeats of a cell declared in the matrix
are the only pooling; two separate runs of the same cell are never added together (each gets a
row of its own, named by its run).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, PrivateAttr

from harness.contracts import (
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    transcript_data,
)
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import merge_problems
from repro.bundle.layout.names import MANIFEST
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord, CellSummary, RunRecord
from repro.bundle.redact import Redactor
from repro.bundle.setup import SetupRecord, cell_setup, differences, engine_names, ids_label
from repro.check.verdict import RunVerdict, check_run
from repro.core.errors import BadInput
from repro.core.files import sha256_file
from repro.report.coverage import run_coverage
from repro.report.setup import TableSetup, run_setups
from repro.report.stats import wilson
from repro.report.tables import (
    LADDER_PREFIX,
    PROTOCOL_SHORT,
    SAFETY_CATEGORY,
    ExcludedCell,
    PaperTables,
    ProtocolTotals,
    RowHardware,
    RowTemplate,
    TableRow,
    TimeSplit,
)
from repro.spec.findings import TemplateFacts
from repro.spec.harnesses import HarnessPin
from repro.suites.registry import kind_of


class ValidCell(BaseModel):
    run_id: str
    record: CellRecord
    template: TemplateFacts | None = None  # the run's record of the model's chat template (format 5)
    harness: HarnessPin | None = None  # the harness that scored it, as its suite kind pins it
    variant: str | None = None  # the engine variant of the run's profile
    cpu_model: str | None = None  # the run's host CPU
    setup: SetupRecord | None = None  # the cell's setup from its bundle's records (repro.bundle.setup)
    commit: str | None = None  # the project commit its run was made at (run.json source.commit)
    results: list[ScenarioResult]
    transcripts: list[TranscriptLine] = []
    _index: TranscriptIndex | None = PrivateAttr(default=None)

    def transcript(self, scenario_id: str) -> list[TranscriptEntry] | None:
        """A scenario's transcript: from transcripts.jsonl, else from its result line."""
        return self.index().transcript(scenario_id)

    def transcript_sha256(self, scenario_id: str) -> str:
        """transcript_sha256 of the scenario's transcript, computed once per cell and scenario."""
        return self.index().sha256(scenario_id)

    def index(self) -> TranscriptIndex:
        """The cell's transcripts by scenario id (built on first use; rebuilt if the lists change)."""
        if self._index is None or not self._index.indexes(self.results, self.transcripts):
            self._index = TranscriptIndex(self.results, self.transcripts)
        return self._index


class TranscriptIndex:
    """A cell's transcripts by scenario id, as ValidCell.transcript finds them: the first line of
    transcripts.jsonl with the id, else the first result line's own; and their sha256, each once."""

    def __init__(self, results: list[ScenarioResult], lines: list[TranscriptLine]) -> None:
        self.sources = (results, lines)
        self.found: dict[str, list[TranscriptEntry] | None] = {}
        for result in results:
            self.found.setdefault(result.id, result.transcript)
        self.found.update({line.id: line.transcript for line in reversed(lines)})  # the first line with an id wins
        self.digests: dict[str, str] = {}

    def indexes(self, results: list[ScenarioResult], lines: list[TranscriptLine]) -> bool:
        return self.sources[0] is results and self.sources[1] is lines

    def transcript(self, scenario_id: str) -> list[TranscriptEntry] | None:
        return self.found.get(scenario_id)

    def sha256(self, scenario_id: str) -> str:
        if scenario_id not in self.digests:
            self.digests[scenario_id] = transcript_sha256(self.found.get(scenario_id))
        return self.digests[scenario_id]


def canonical_json(value: object) -> str:
    """Sorted keys, no whitespace, UTF-8 as is: equal content, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def transcript_sha256(transcript: list[TranscriptEntry] | None) -> str:
    """sha256 of a transcript's canonical JSON (as its line holds it); "" when there is none."""
    return (
        "" if transcript is None else hashlib.sha256(canonical_json(transcript_data(transcript)).encode()).hexdigest()
    )


def refuse_broken_merge(path: Path) -> None:
    """A merged folder renders only while it holds exactly the whole split it recorded."""
    problems = merge_problems(path) if path.is_dir() else []
    if problems:
        raise BadInput(f"{path}: not the merged folder MERGED.json records ({problems[0]}); see: repro check {path}")


def collect(paths: list[Path], redactor: Redactor | None = None) -> PaperTables:
    return collect_with_cells(paths, redactor)[0]


def collect_with_cells(
    paths: list[Path], redactor: Redactor | None = None, signers: dict[str, str] | None = None
) -> tuple[PaperTables, dict[str, list[ValidCell]]]:
    """The tables and, per row key, the VALID cells the row was built from (for transcripts);
    `signers` (run folder -> signer) names the signatures verified before rendering."""
    valid: list[ValidCell] = []
    exclusions: list[ExcludedCell] = []
    runs: list[str] = []
    verdicts: list[RunVerdict] = []
    seen: set[tuple[str, str]] = set()
    for path in paths:
        refuse_broken_merge(path)
        for run_dir in find_runs(path):
            identity = run_identity(run_dir)
            if identity is not None and identity in seen:  # a run given twice, or a copy of it: one run
                continue
            if identity is not None:
                seen.add(identity)
            bundle = BundleReader(run_dir, remember=None)  # the VALID cells are kept whole anyway
            verdict = check_run(run_dir, redactor, bundle=bundle)
            verdicts.append(verdict)
            runs.append(verdict.run_id)
            valid += valid_cells(bundle, verdict)
            exclusions += [
                ExcludedCell(cell_id=c.cell_id, verdict=c.verdict, reasons=c.reasons, kind=c.kind)
                for c in verdict.cells
                if c.verdict != "VALID"
            ]
    grouped = [(make_row(cells, run), cells) for cells, run in group_rows(valid)]
    rows = with_labels([row for row, _ in grouped])
    grouped = [(labelled, cells) for labelled, (_, cells) in zip(rows, grouped, strict=True)]
    categories = sorted(
        {c for row in rows for c in row.by_category if not c.startswith(LADDER_PREFIX)} - {SAFETY_CATEGORY}
    )
    coverage = run_coverage(verdicts)
    setup = TableSetup(
        runs=run_setups(verdicts, signers),
        decodings=list(dict.fromkeys(row.decoding for row in rows)),
        executions=list(dict.fromkeys(row.execution_label for row in rows)),
        coverage=coverage,
    )
    tables = PaperTables(
        rows=rows,
        categories=categories,
        safety_category=SAFETY_CATEGORY,
        exclusions=exclusions,
        runs=runs,
        absent=coverage.absent,
        setup=setup,
    )
    return tables, {row.key: sorted(cells, key=lambda c: c.record.cell.repeat) for row, cells in grouped}


def run_identity(run_dir: Path) -> tuple[str, str] | None:
    """A run's id and its manifest's sha256: two folders with both equal hold one run (None when
    either cannot be read: the check says why)."""
    manifest = run_dir / MANIFEST
    if manifest.is_symlink() or not manifest.is_file():
        return None
    try:
        return BundleReader(run_dir).run().run_id, sha256_file(manifest)
    except BadInput:
        return None


def with_labels(rows: list[TableRow]) -> list[TableRow]:
    """Each row with its short label, "model / protocol / suite", unique among the rows; where
    two rows would still read alike, the engine, then the project commit, then the run are added."""
    models = model_labels(rows)
    labelled = [
        r.model_copy(
            update={
                "model_label": models[r.model_sha256],
                "label": f"{models[r.model_sha256]} / {PROTOCOL_SHORT.get(r.protocol, r.protocol)}"
                + (f" via {r.runtime}" if r.runtime else "")
                + f" / {r.suite}"
                + (f" ({r.parts})" if r.parts else ""),
            }
        )
        for r in rows
    ]
    for extra in ("engine", "commit_label", "run"):
        counts = Counter(r.label for r in labelled)
        labelled = [
            r.model_copy(update={"label": f"{r.label} / {getattr(r, extra)}"})
            if counts[r.label] > 1 and getattr(r, extra)
            else r
            for r in labelled
        ]
    return labelled


def model_labels(rows: list[TableRow]) -> dict[str, str]:
    """Model sha256 -> a short name: family and parameters ("Qwen2.5 0.5B"), with the quant when
    two models share them, and the model id when even that is shared."""

    def shared(name: Callable[[TableRow], str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for r in rows:
            found.setdefault(name(r), set()).add(r.model_sha256)
        return found

    def short(r: TableRow) -> str:
        return f"{r.family} {r.parameters}".strip() or r.model

    def with_quant(r: TableRow) -> str:
        return f"{short(r)} {r.quant}"

    plain, quant = shared(short), shared(with_quant)
    return {
        r.model_sha256: short(r)
        if len(plain[short(r)]) == 1
        else with_quant(r)
        if len(quant[with_quant(r)]) == 1
        else r.model
        for r in rows
    }


def record_setup(run: RunRecord, record: CellRecord) -> SetupRecord:
    """The cell's one setup record (repro.bundle.setup), its harness pinned as its suite kind pins it:
    what a table's row, the exports and verify state of it."""
    suite = record.cell.suite
    return cell_setup(run, record, kind_of(suite).harness_pin(suite, run.source))


def valid_cells(bundle: BundleReader, verdict: RunVerdict) -> list[ValidCell]:
    """The verdict's VALID cells, read through the reader that checked them."""
    cells = []
    run = bundle.run()
    for cell in verdict.cells:
        if cell.verdict == "VALID":
            record, results, transcripts = (
                bundle.cell(cell.cell_id),
                bundle.results(cell.cell_id),
                bundle.transcripts(cell.cell_id),
            )
            template = run.chat_templates.get(record.cell.model.id)
            setup = record_setup(run, record)
            facts = {
                "template": template,
                "harness": setup.harness,
                "variant": run.profile_settings.engine_variant,
                "cpu_model": run.system.cpu_model,
                "setup": setup,
                "commit": run.source.commit,
            }
            cells.append(
                ValidCell(run_id=verdict.run_id, record=record, results=results, transcripts=transcripts, **facts)
            )
    return cells


def row_key(record: CellRecord) -> tuple[str, ...]:
    """What makes two cells one row (repeats of one setup): the same model, engine, protocol,
    scenarios, decoding and profile, run by the same harness (ours, or an external one by its pin:
    the Tholos runner and our harness load the same scenario files, and are two rows)."""
    cell = record.cell
    identity = record.reported_identity
    pin = kind_of(cell.suite).harness_pin(cell.suite, None)
    return (
        f"{pin.name}:{pin.archive_sha256}" if pin.archive_sha256 else pin.name,
        cell.model.sha256,
        cell.model.quant,
        cell.engine.id,
        identity or "",
        cell.protocol,
        record.suite_sha256 or cell.suite.id,
        cell.decoding.model_dump_json(),
        cell.profile,
        cell.runtime.model_dump_json() if cell.runtime is not None else "",
    )


def group_rows(cells: list[ValidCell]) -> list[tuple[list[ValidCell], str | None]]:
    """Cells by row key; a group whose cells were made on different setups (another project
    commit or harness pin, another CPU model) or where one cell id appears twice (two runs) splits
    by run: a row is made of cells that agree, never of mixed parts (nor of two commits)."""
    groups: dict[tuple[str, ...], list[ValidCell]] = {}
    for cell in cells:
        groups.setdefault(row_key(cell.record), []).append(cell)
    rows: list[tuple[list[ValidCell], str | None]] = []
    for members in groups.values():
        ids = Counter(m.record.cell.id for m in members)
        if max(ids.values()) == 1 and all(agree(members[0], m) for m in members):
            rows.append((members, None))
            continue
        for run_id in dict.fromkeys(m.run_id for m in members):
            rows.append(([m for m in members if m.run_id == run_id], run_id))
    return rows


def agree(a: ValidCell, b: ValidCell) -> bool:
    """Two cells of one row key are one setup: the one comparison of their setups (the scenarios of
    their parts aside: parts of one suite differ in them alone) finds no input that differs, their
    harness pins are one, and so is their project commit (a row names one commit, even where two
    commits' harness trees agree, and whichever harness scored it: an external one's pin names none)."""
    if a.commit != b.commit:
        return False
    if a.setup is None or b.setup is None:
        return a.setup == b.setup
    return a.harness == b.harness and not differences(a.setup.without_part(), b.setup.without_part())


def make_row(cells: list[ValidCell], run: str | None) -> TableRow:
    cells = sorted(cells, key=lambda c: c.record.cell.repeat)
    first = cells[0].record
    results = [r for c in cells for r in c.results]
    summary = CellSummary.of(results)
    scenarios: dict[str, list[bool]] = {}
    transcripts: dict[str, list[str]] = {}
    for cell in cells:
        for result in cell.results:
            scenarios.setdefault(result.id, []).append(result.passed)
            transcripts.setdefault(result.id, []).append(cell.transcript_sha256(result.id))
    spec = first.cell
    return TableRow(
        model=spec.model.id,
        model_sha256=spec.model.sha256,
        engine_id=spec.engine.id,
        engine_identity=spec.engine.expected_identity(),
        family=spec.model.family,
        parameters=spec.model.parameters,
        quant=spec.model.quant,
        file_size_mb=round(spec.model.file_size / 1024**2, 1),
        engine=spec.engine.label,
        protocol=spec.protocol,
        runtime=spec.runtime.id if spec.runtime is not None else None,
        runtime_pin=spec.runtime.pin if spec.runtime is not None else None,
        suite=spec.suite.id,
        suite_sha256=first.suite_sha256,
        parts=missing_parts(cells),
        decoding=decoding_label(first),
        profile=spec.profile,
        run=run,
        cells=len(cells),
        passed=summary.passed,
        total=summary.total,
        interval=wilson(summary.passed, summary.total),
        by_category=summary.by_category,
        scenarios=dict(sorted(scenarios.items())),
        transcripts=dict(sorted(transcripts.items())),
        failure_types=summary.failure_types,
        partial_score=mean_partial_score(results),
        protocol_totals=ProtocolTotals.of(results),
        by_level=ladder_levels(results),
        time=TimeSplit.of([c.record for c in cells], results),
        execution=first.execution,
        chat_template=RowTemplate.of(cells[0].template, first),
        hardware=RowHardware.of(first),
        harness=cells[0].harness,
        engine_kind=spec.engine.kind,
        engine_names=engine_names(spec.engine, first.reported_identity),
        setup=row_setup(cells),
        engine_variant=cells[0].variant,
        file_size=spec.model.file_size,
        cpu_model=cells[0].cpu_model,
        kernels=first.engine_kernels,
        commit=cells[0].commit,
    )


def row_setup(cells: list[ValidCell]) -> SetupRecord | None:
    """The row's setup: its cells' (which agree), with the scenarios of all its parts."""
    first = cells[0].setup
    if first is None:
        return None
    ids = sorted({scenario for cell in cells for scenario in cell.record.suite_ids})
    return first.model_copy(update={"scenarios": ids_label(ids)})


def missing_parts(cells: list[ValidCell]) -> str | None:
    """How a row falls short of its suite's parts ("parts 1, 2 of 4"); None when it holds every
    part (or the suite has none). Each part's cells are VALID ones: a part left out is missing."""
    parts = cells[0].record.cell.suite.parts
    present = sorted({c.record.cell.part for c in cells if c.record.cell.part is not None})
    if not parts or present == list(range(1, parts + 1)):
        return None
    return f"part{'s' if len(present) > 1 else ''} {', '.join(map(str, present))} of {parts}"


def mean_partial_score(results: list[ScenarioResult]) -> float | None:
    """The mean partial credit (0 to 1) of the scenarios that have one (engine failures have none)."""
    scores = [r.partial_score for r in results if r.partial_score is not None]
    return round(sum(scores) / len(scores), 3) if scores else None


def ladder_levels(results: list[ScenarioResult]) -> dict[int, tuple[int, int]]:
    """(passed, total) per ladder level, from the scenarios of ladder categories only (workspace
    scenarios label their own levels, with another meaning)."""
    counts: dict[int, list[int]] = {}
    for result in results:
        if result.category.startswith(LADDER_PREFIX) and result.level is not None:
            pair = counts.setdefault(result.level, [0, 0])
            pair[0] += result.passed
            pair[1] += 1
    return {level: (pair[0], pair[1]) for level, pair in sorted(counts.items())}


def decoding_label(record: CellRecord) -> str:
    d = record.cell.decoding
    return f"t={d.temperature:g} seed={d.seed} max_tokens={d.max_tokens} ctx={d.context}"
