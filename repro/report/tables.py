"""The tables' rows: what one row holds (counts, intervals, failure types, time, hardware, chat
template), the excluded cells and the protocol comparisons beside them, and the tables as a whole
(PaperTables, what `repro paper render` writes as results.json). repro.report.aggregate builds them
from checked bundles; the renderers, verify and compare read them.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, get_args

from pydantic import BaseModel, SerializerFunctionWrapHandler, computed_field, model_serializer

from harness.contracts import (
    FAILURE_LAYER,
    FAILURE_LAYERS,
    FAILURE_TYPES,
    OCCASIONAL_LAYERS,
    ScenarioResult,
)
from harness.scoring import lab_counts
from repro.bundle.evidence import AbsentCell
from repro.bundle.records import CellRecord, Execution
from repro.bundle.setup import SetupRecord, served_template
from repro.report.setup import TableSetup
from repro.report.stats import Consistency, Interval, Spread, consistency, spread
from repro.spec.cells import exclusion_label
from repro.spec.findings import TemplateFacts
from repro.spec.harnesses import HarnessPin
from repro.spec.matrix import Protocol

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
    runtime: str | None = None  # the agent runtime that produced its turns (None: raw, our own client)
    runtime_pin: str | None = None  # the runtime's package==version
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
    # set when two runs of the same cells would otherwise share a row (another commit, another setup)
    run: str | None = None
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
    kernels: str | None = None  # the instruction set the engine reported (CellRecord.engine_kernels)
    setup: SetupRecord | None = None  # the one setup record of its cells (None: a results.json of an older repro)
    # the project commit its cells were made at (run.json source.commit), one: cells of two commits
    # are never joined, they make a row each, labelled by its commit (None: not recorded, or an older repro)
    commit: str | None = None

    @property
    def exact(self) -> bool:
        """One slot and the prompt cache off or per scenario (each scenario computed as alone on a fresh
        engine in the same mode): False marks the row."""
        return self.execution is None or self.execution.exact

    @property
    def commit_label(self) -> str | None:
        """ "commit 1a2b3c4d5e6f", what a label adds where two rows differ in their commit."""
        return f"commit {self.commit[:12]}" if self.commit else None

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
        return {layer: n for layer, n in counts.items() if n or layer not in OCCASIONAL_LAYERS}

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
        """Model / engine / protocol (via its runtime) / suite, and for a row split from others its run
        and commit."""
        split = (self.run, self.commit_label) if self.run else ()
        played = f"{self.protocol} via {self.runtime}" if self.runtime else self.protocol
        return " / ".join(part for part in (self.model, self.engine_id, played, self.suite, *split) if part)

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

    @model_serializer(mode="wrap")
    def _without_raw_runtime(self, handler: SerializerFunctionWrapHandler) -> dict:
        """`runtime` and `runtime_pin` are written only for a runtime's row, so a raw row dumps as before."""
        data = handler(self)
        if isinstance(data, dict) and self.runtime is None:
            data.pop("runtime", None)
            data.pop("runtime_pin", None)
        return data


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
        """What each short name of the row labels stands for: the models (id, quant, sha256), the
        protocols, and the project commits a label names (rows of two commits), in row order."""
        models = {
            r.model_label: f"{r.model} ({r.quant}, {r.file_size_mb:g} MB, sha256 {r.model_sha256[:12]})"
            for r in self.rows
        }
        protocols = {PROTOCOL_SHORT.get(r.protocol, r.protocol): f"protocol {r.protocol}" for r in self.rows}
        commits = {
            r.commit_label: f"rows made at project commit {r.commit}, never joined with another commit's"
            for r in self.rows
            if r.commit_label and f" / {r.commit_label}" in r.label
        }
        return list(models.items()) + list(protocols.items()) + list(commits.items())

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
        """Every layer, but a layer shown only where it occurs (the runtime's) where no row has it."""
        seen = {layer for row in self.rows for layer in row.failure_layers}
        return tuple(layer for layer in FAILURE_LAYERS if layer not in OCCASIONAL_LAYERS or layer in seen)

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
        """The GGUF's or the pinned template (`facts`, run.json), or repro's explicit one that the
        engine reported serving (source `explicit`: Ollama's Go template for the family)."""
        served = served_template(facts, record)
        if served is None:
            return None
        if facts is None:
            return cls(source=served.source, sha256=served.sha256)
        reported = record.engine_settings.reported
        found = reported.get("chat_template_caps")
        caps: dict[str, Any] = found if isinstance(found, dict) else {}
        return cls(
            source=served.source,
            sha256=served.sha256,
            supports_tools=caps.get("supports_tools"),
            supports_tool_calls=caps.get("supports_tool_calls"),
            end_of_turn=facts.end_of_turn,
        )
