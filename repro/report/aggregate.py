"""Table rows from checked bundles: only VALID cells, only figures recomputed from the evidence.

A row is one combination of everything that can change a number: model bytes and quant, engine
identity, protocol, suite bytes, decoding and profile. Repeats of a cell declared in the matrix
are the only pooling; two separate runs of the same cell are never added together (each gets a
row of its own, named by its run).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, PrivateAttr, computed_field

from harness.contracts import (
    FAILURE_LAYER,
    FAILURE_LAYERS,
    FAILURE_TYPES,
    ScenarioResult,
    TranscriptEntry,
    TranscriptLine,
    transcript_data,
)
from harness.scoring import lab_counts
from repro.bundle.evidence import AbsentCell
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import merge_problems
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord, CellSummary, Execution
from repro.bundle.redact import Redactor
from repro.check.verdict import RunVerdict, check_run
from repro.core.errors import BadInput
from repro.report.coverage import run_coverage
from repro.report.setup import TableSetup, run_setups
from repro.report.stats import Consistency, Interval, Spread, consistency, spread, wilson
from repro.spec.cells import exclusion_label
from repro.spec.findings import TemplateFacts
from repro.spec.harnesses import HarnessPin
from repro.spec.matrix import Protocol
from repro.suites.registry import kind_of

SAFETY_CATEGORY = "injection"
LADDER_PREFIX = "ladder-"  # capability-ladder categories (ladder-0 .. ladder-8): reported by level
LADDER_LEVELS = range(9)
PROTOCOL_ORDER: tuple[str, ...] = get_args(Protocol)
# Short protocol names for row labels (the key names the protocol each stands for).
PROTOCOL_SHORT = {
    "json_schema": "schema",
    "native_tools": "native",
    "react": "ReAct",
    "json_prompt": "repair",
    "json_object": "object",
}


class ProtocolTotals(BaseModel):
    """How a row's model handled its protocol, summed over its scenarios (harness ProtocolStats)."""

    model_turns: int = 0
    valid_calls: int = 0
    invalid_turns: int = 0
    repairs: int = 0
    ignored_calls: int = 0

    @classmethod
    def of(cls, results: list[ScenarioResult]) -> ProtocolTotals:
        stats = [r.protocol_stats for r in results if r.protocol_stats is not None]
        return cls(**{field: sum(getattr(s, field) for s in stats) for field in cls.model_fields})

    @computed_field  # type: ignore[prop-decorator]
    @property
    def valid_call_rate(self) -> float | None:
        """Valid calls over model turns (None without turns)."""
        return self.valid_calls / self.model_turns if self.model_turns else None


class TimeSplit(BaseModel):
    """Where a row's time went: the engine's boot and gate (per engine, shared by its group's
    cells: medians over the row's cells), then, summed over the row's cells, the engine's own
    prompt processing and generation time (its reported timings) and the harness's share (the
    harness container's wall time minus the engine's); medians of tokens per second per request.
    A harness whose results carry no engine timings (an external one) has its wall time and its
    wall time per scenario, and no split (None, never 0)."""

    engine_boot_s: float | None = None
    gate_s: float | None = None
    wall_s: float | None = None
    per_scenario_s: float | None = None
    prompt_s: float | None = None
    generation_s: float | None = None
    harness_s: float | None = None
    prompt_tps: float | None = None
    generation_tps: float | None = None

    @classmethod
    def of(cls, records: list[CellRecord], results: list[ScenarioResult]) -> TimeSplit:
        steps = [t.timings for r in results for t in r.engine_timings if t.timings]
        prompt_s = round(sum(_number(t.get("prompt_ms")) for t in steps) / 1000, 3) if steps else None
        generation_s = round(sum(_number(t.get("predicted_ms")) for t in steps) / 1000, 3) if steps else None
        walls = [r.harness_seconds for r in records if r.harness_seconds is not None]
        wall = sum(walls) if len(walls) == len(records) else None
        split = wall is not None and prompt_s is not None and generation_s is not None
        return cls(
            engine_boot_s=_median([r.engine_boot_seconds for r in records]),
            gate_s=_median([r.gate.total_seconds if r.gate else None for r in records]),
            wall_s=wall,
            per_scenario_s=round(wall / len(results), 3) if wall is not None and results else None,
            prompt_s=prompt_s,
            generation_s=generation_s,
            harness_s=round(max(wall - prompt_s - generation_s, 0.0), 3) if split else None,  # type: ignore[operator]
            prompt_tps=_median([_rate(t.get("prompt_n"), t.get("prompt_ms")) for t in steps]),
            generation_tps=_median([_rate(t.get("predicted_n"), t.get("predicted_ms")) for t in steps]),
        )


def _number(value: object) -> float:
    """A finite, non-negative timing from an engine's reply (anything else counts as 0)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e12 else 0.0


def _rate(count: object, milliseconds: object) -> float | None:
    n, ms = _number(count), _number(milliseconds)
    return n / ms * 1000 if n and ms else None


def _median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    return round(statistics.median(known), 3) if known else None


class RowHardware(BaseModel):
    """The GPU a row ran on, as nvidia-smi named it (None on CPU rows and in older bundles)."""

    accelerator: str
    compute_capability: str | None = None
    driver_version: str | None = None
    memory_mib: int | None = None
    mig_profile: str | None = None

    @classmethod
    def of(cls, record: CellRecord) -> RowHardware | None:
        devices = record.gpu or []
        if not devices:
            return None
        first = devices[0]
        return cls(
            accelerator=", ".join(device.name for device in devices),
            compute_capability=first.compute_capability,
            driver_version=first.driver_version,
            memory_mib=first.memory_mib,
            mig_profile=first.mig_profile,
        )

    def label(self) -> str:
        parts = [self.accelerator, f"compute capability {self.compute_capability}" if self.compute_capability else ""]
        parts += [
            f"driver {self.driver_version}" if self.driver_version else "",
            f"MIG {self.mig_profile}" if self.mig_profile else "",
        ]
        return ", ".join(part for part in parts if part)


class TableRow(BaseModel):
    model: str
    label: str = ""  # a short name for the row (model, protocol, suite): PaperTables.key says what each part stands for
    model_label: str = ""  # the short model name within it (family and parameters, unless two models share them)
    parameters: str = ""
    model_sha256: str
    engine_id: str
    engine_identity: str
    family: str
    quant: str
    file_size_mb: float
    engine: str
    protocol: str
    suite: str
    suite_sha256: str | None = None
    # "parts 1, 2 of 4" where the row holds only some of its suite's parts (None: all its scenarios)
    parts: str | None = None
    decoding: str = ""
    profile: str = ""
    run: str | None = None  # set when two runs of the same cells would otherwise share a row
    cells: int
    passed: int
    total: int
    interval: Interval
    by_category: dict[str, tuple[int, int]]
    scenarios: dict[str, list[bool]] = {}  # scenario id -> passed, one entry per repeat
    transcripts: dict[str, list[str]] = {}  # scenario id -> sha256 of its canonical transcript per repeat ("" if none)
    failure_types: dict[str, int] = {}  # failure type -> failed scenarios, over all repeats
    partial_score: float | None = None  # mean partial credit over the scenarios that have one
    protocol_totals: ProtocolTotals = ProtocolTotals()
    by_level: dict[int, tuple[int, int]] = {}  # ladder level -> (passed, total), ladder scenarios only
    time: TimeSplit = TimeSplit()
    execution: Execution | None = None  # threads, slots, prompt cache (None: an older bundle, 1 slot, no cache)
    chat_template: RowTemplate | None = None  # what the model was shown the task through
    hardware: RowHardware | None = None  # the GPU it ran on (GPU profiles; None on CPU)
    harness: HarnessPin | None = None  # the harness that scored it and its pin (None: a results.json of an older repro)
    engine_kind: str | None = None  # llama.cpp or ollama (None: an older results.json)
    engine_names: list[str] = []  # every name of its engine build: identity, label, build commit, bN
    engine_variant: str | None = None  # the image variant the profile ran: cpu or cuda
    file_size: int | None = None  # the GGUF's bytes, as the matrix pins them
    cpu_model: str | None = None  # the host's CPU, as the run recorded it (on a CPU, its kernels can change the sums)

    @property
    def exact(self) -> bool:
        """Computed as lone serial requests are (one slot, no prompt cache): False marks the row."""
        return self.execution is None or self.execution.exact

    @property
    def execution_label(self) -> str:
        return self.execution.label() if self.execution else "1 slot, prompt cache off (threads not recorded)"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def highest_level(self) -> int | None:
        """The highest ladder level L such that L and every level below it ran and passed at least
        half their scenarios; None when level 0 does not (or the row ran no ladder scenario)."""
        reached = None
        for level in LADDER_LEVELS:
            passed, total = self.by_level.get(level, (0, 0))
            if not total or 2 * passed < total:
                break
            reached = level
        return reached

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failure_layers(self) -> dict[str, int]:
        """Failed scenarios per layer (configuration, engine, protocol, behaviour, outcome)."""
        counts: dict[str, int] = dict.fromkeys(FAILURE_LAYERS, 0)
        for failure, n in self.failure_types.items():
            layer = FAILURE_LAYER.get(failure)
            if layer is not None:
                counts[layer] += n
        return counts

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lab_codes(self) -> dict[str, int]:
        """Failed scenarios per Local Agent Bench reason code (harness.scoring.lab_codes), beside ours."""
        return lab_counts(self.failure_types)

    @property
    def setting(self) -> tuple[str, ...]:
        """Everything but the protocol: rows that differ only in protocol compare side by side."""
        return (
            self.model_sha256,
            self.engine_identity,
            self.suite,
            self.suite_sha256 or "",
            self.decoding,
            self.profile,
            self.run or "",
        )

    @property
    def key(self) -> str:
        return " / ".join(part for part in (self.model, self.engine_id, self.protocol, self.suite, self.run) if part)

    @property
    def repeats(self) -> int:
        return max((len(outcomes) for outcomes in self.scenarios.values()), default=self.cells)

    @property
    def spread(self) -> Spread:
        """Pass counts per repeat (repeat i counts every scenario's i-th outcome), mean and sd."""
        return spread([sum(o[i] for o in self.scenarios.values() if len(o) > i) for i in range(self.repeats)])

    @property
    def consistency(self) -> Consistency:
        return consistency(self.scenarios)

    @property
    def identical_across_repeats(self) -> int:
        """Scenarios whose transcript is the same in every repeat (all recorded, all equal)."""
        return sum(len(set(h)) == 1 and "" not in h for h in self.transcripts.values())


class ExcludedCell(BaseModel):
    cell_id: str
    verdict: str
    reasons: list[str]
    kind: str | None = None  # who left it out: author, configuration, speed, fault, unknown (None: not clean-room)

    @property
    def why(self) -> str:
        """The reasons behind the kind's label: "excluded by the matrix (author): smoke time budget: ..."."""
        reasons = "; ".join(self.reasons) or self.verdict
        return f"{exclusion_label(self.kind)}: {reasons}" if self.kind else reasons


class ProtocolComparison(BaseModel):
    """One model in one setting under each protocol it ran (rows that differ only in protocol)."""

    model: str
    model_label: str = ""
    quant: str
    engine: str
    suite: str
    by_protocol: dict[str, TableRow]


class PaperTables(BaseModel):
    rows: list[TableRow]
    categories: list[str]
    safety_category: str
    exclusions: list[ExcludedCell]
    runs: list[str]
    absent: list[AbsentCell] = []  # planned cells that no bundle rendered here holds (a partial run): --only or a shard
    setup: TableSetup = TableSetup()  # how the numbers were made: profile, hardware, commit, verdicts, coverage

    @property
    def category_rows(self) -> list[TableRow]:
        """The rows that ran any of the table's categories (a ladder-only row has none to show)."""
        return [row for row in self.rows if any(c in row.by_category for c in self.categories)]

    def category_chunks(self, size: int = 6) -> list[list[str]]:
        """The categories in groups of at most `size` (one LaTeX table each, so each fits a page)."""
        return [self.categories[i : i + size] for i in range(0, len(self.categories), size)] or [[]]

    @property
    def key(self) -> list[tuple[str, str]]:
        """What each short name of the row labels stands for: the models (id, quant, sha256) and
        the protocols, in row order."""
        models = {
            r.model_label: f"{r.model} ({r.quant}, {r.file_size_mb:g} MB, sha256 {r.model_sha256[:12]})"
            for r in self.rows
        }
        protocols = {PROTOCOL_SHORT.get(r.protocol, r.protocol): f"protocol {r.protocol}" for r in self.rows}
        return list(models.items()) + list(protocols.items())

    @property
    def exclusion_reasons(self) -> list[tuple[str, int]]:
        """Each exclusion reason with the number of cells it excluded (captions name no cell id)."""
        return list(Counter(e.why for e in self.exclusions).items())

    @property
    def failure_type_columns(self) -> list[str]:
        """The failure types that occur in any row, in precedence order (then any unknown name)."""
        seen = {failure for row in self.rows for failure in row.failure_types}
        return [f for f in FAILURE_TYPES if f in seen] + sorted(seen - set(FAILURE_TYPES))

    @property
    def failure_layers(self) -> tuple[str, ...]:
        return FAILURE_LAYERS

    @property
    def ladder_rows(self) -> list[TableRow]:
        return [row for row in self.rows if row.by_level]

    @property
    def ladder_levels(self) -> list[int]:
        return sorted({level for row in self.rows for level in row.by_level})

    @property
    def protocols(self) -> list[str]:
        return sorted(
            {row.protocol for row in self.rows},
            key=lambda p: (PROTOCOL_ORDER.index(p) if p in PROTOCOL_ORDER else len(PROTOCOL_ORDER), p),
        )

    @property
    def protocol_comparison(self) -> list[ProtocolComparison]:
        """Settings with more than one protocol, in row order; empty when only one protocol ran."""
        groups: dict[tuple[str, ...], list[TableRow]] = {}
        for row in self.rows:
            groups.setdefault(row.setting, []).append(row)
        return [
            ProtocolComparison(
                model=rows[0].model,
                model_label=rows[0].model_label,
                quant=rows[0].quant,
                engine=rows[0].engine,
                suite=rows[0].suite,
                by_protocol={r.protocol: r for r in rows},
            )
            for rows in groups.values()
            if len(rows) > 1
        ]


class RowTemplate(BaseModel):
    """The chat template a row's engine used: where it came from, its sha256 as the engine served
    it, and what the engine reported it carries (`/props` chat_template_caps)."""

    source: str
    sha256: str | None
    supports_tools: bool | None = None
    supports_tool_calls: bool | None = None
    end_of_turn: str | None = None

    @classmethod
    def of(cls, facts: TemplateFacts | None, record: CellRecord) -> RowTemplate | None:
        if facts is None:
            return None
        reported = record.engine_settings.reported
        found = reported.get("chat_template_caps")
        caps: dict[str, Any] = found if isinstance(found, dict) else {}
        return cls(
            source=facts.source,
            sha256=reported.get("chat_template_sha256"),
            supports_tools=caps.get("supports_tools"),
            supports_tool_calls=caps.get("supports_tool_calls"),
            end_of_turn=facts.end_of_turn,
        )


class ValidCell(BaseModel):
    run_id: str
    record: CellRecord
    template: TemplateFacts | None = None  # the run's record of the model's chat template (format 5)
    harness: HarnessPin | None = None  # the harness that scored it, as its suite kind pins it
    variant: str | None = None  # the engine variant of the run's profile
    cpu_model: str | None = None  # the run's host CPU
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
    for path in paths:
        refuse_broken_merge(path)
        for run_dir in find_runs(path):
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


def with_labels(rows: list[TableRow]) -> list[TableRow]:
    """Each row with its short label, "model / protocol / suite", unique among the rows; where
    two rows would still read alike, the engine and then the run are added."""
    models = model_labels(rows)
    labelled = [
        r.model_copy(
            update={
                "model_label": models[r.model_sha256],
                "label": f"{models[r.model_sha256]} / {PROTOCOL_SHORT.get(r.protocol, r.protocol)} / {r.suite}"
                + (f" ({r.parts})" if r.parts else ""),
            }
        )
        for r in rows
    ]
    for extra in ("engine", "run"):
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
            harness = kind_of(record.cell.suite).harness_pin(record.cell.suite, run.source)
            facts = {
                "template": template,
                "harness": harness,
                "variant": run.profile_settings.engine_variant,
                "cpu_model": run.system.cpu_model,
            }
            cells.append(
                ValidCell(run_id=verdict.run_id, record=record, results=results, transcripts=transcripts, **facts)
            )
    return cells


def engine_names(record: CellRecord) -> list[str]:
    """Every name a source may give the cell's engine build: its identity, its label, and for a
    source build its commit and build number."""
    engine = record.cell.engine
    names = [
        engine.expected_identity(),
        record.engine_identity.reported if record.engine_identity else "",
        engine.label,
    ]
    if engine.build is not None:
        names += [engine.build.build_commit, f"b{engine.build.build_number}"]
    return list(dict.fromkeys(name for name in names if name))


def row_key(record: CellRecord) -> tuple[str, ...]:
    """What makes two cells one row (repeats of one setup): the same model, engine, protocol,
    scenarios, decoding and profile, run by the same harness (ours, or an external one by its pin:
    the Tholos runner and our harness load the same scenario files, and are two rows)."""
    cell = record.cell
    identity = record.engine_identity.reported if record.engine_identity else None
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
    )


def group_rows(cells: list[ValidCell]) -> list[tuple[list[ValidCell], str | None]]:
    """Cells by row key; a group where one cell id appears twice (two runs) splits by run."""
    groups: dict[tuple[str, ...], list[ValidCell]] = {}
    for cell in cells:
        groups.setdefault(row_key(cell.record), []).append(cell)
    rows: list[tuple[list[ValidCell], str | None]] = []
    for members in groups.values():
        ids = Counter(m.record.cell.id for m in members)
        if max(ids.values()) == 1:
            rows.append((members, None))
            continue
        for run_id in dict.fromkeys(m.run_id for m in members):
            rows.append(([m for m in members if m.run_id == run_id], run_id))
    return rows


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
        engine_names=engine_names(first),
        engine_variant=cells[0].variant,
        file_size=spec.model.file_size,
        cpu_model=cells[0].cpu_model,
    )


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
