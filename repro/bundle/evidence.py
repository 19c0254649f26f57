"""A bundle as the check rules read it: the parsed run and cell records, the reader, the host's
redactor, and the plan recomputed from the embedded matrix. The rules (repro.check) and the
external harnesses' readers (repro.suites.external.evidence) take these; nothing here judges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from repro.bundle.layout.names import MATRIX_COPY
from repro.bundle.layout.reader import BundleReader
from repro.bundle.records import CellRecord, RunRecord
from repro.bundle.redact import Redactor
from repro.core.errors import BadInput, NotAtHand
from repro.plan.planner import listed_exclusions, make_plan, parse_shard, select_cells, shard_cells
from repro.spec.cells import Cell, ExclusionKind
from repro.spec.loading import load_matrix
from repro.spec.matrix import LatencyGateSettings, ModelSpec


class AbsentCell(BaseModel):
    """A cell the matrix plans on this profile that the run did not select, and why."""

    cell_id: str
    reason: str


class RecomputedPlan(BaseModel):
    """The run's plan as the embedded matrix gives it, or why it could not be recomputed."""

    planned: list[Cell] = []  # the run's selection: --only, then --shard
    whole: list[Cell] = []  # every runnable cell of the plan on this profile
    excluded: dict[str, str] = {}
    excluded_kinds: dict[str, ExclusionKind] = {}  # who excluded each: the matrix (author) or repro (configuration)
    latency_gate: LatencyGateSettings | None = None
    models: list[ModelSpec] = []  # the embedded matrix's models (their chat templates are checked)
    error: str | None = None

    @classmethod
    def of(cls, run: RunRecord, bundle: BundleReader) -> RecomputedPlan:
        try:
            loaded = load_matrix(bundle.matrix_path(), embedded=True)
            if loaded.sha256 != run.matrix.sha256:
                return cls(
                    error=f"{MATRIX_COPY} is not the matrix the run names (sha256 {loaded.sha256[:12]}, "
                    f"recorded {run.matrix.sha256[:12]})"
                )
            plan = make_plan(loaded, run.profile, run.profile_settings, templates=run.chat_templates)
            shard = parse_shard(run.shard) if run.shard else None
            cells = shard_cells(select_cells(plan, run.only), shard)
        except BadInput as error:
            return cls(error=f"the plan cannot be recomputed from {MATRIX_COPY}: {error}")
        excluded, kinds = listed_exclusions(plan, shard)
        return cls(
            planned=cells,
            whole=plan.cells,
            excluded=excluded,
            excluded_kinds=kinds,
            latency_gate=loaded.matrix.latency_gate,
            models=list(loaded.matrix.models),
        )

    def absent(self, run: RunRecord) -> list[AbsentCell]:
        """The plan's cells the run's selection leaves out, each with the option that left it out."""
        selected = {cell.id for cell in self.planned}
        return [
            AbsentCell(cell_id=cell.id, reason=absence_reason(run, cell.id))
            for cell in self.whole
            if cell.id not in selected
        ]


def absence_reason(run: RunRecord, cell_id: str) -> str:
    if run.only and cell_id not in run.only:
        return f"not selected: the run ran --only {len(run.only)} cell(s)"
    return f"in another shard: this bundle is shard {run.shard}"


class RunEvidence(BaseModel):
    """What the run rules read: the parsed run record, the bundle's reader, and the host's redactor."""

    model_config = {"arbitrary_types_allowed": True}

    run: RunRecord
    bundle: BundleReader
    redactor: Redactor
    plan: RecomputedPlan | None = None  # format 3: the plan recomputed from the embedded matrix
    # repro check --source: the author's repository of a matrix kept outside the project
    author_repo: Path | None = None


class CellEvidence(RunEvidence):
    """What the cell rules read: the run's evidence, the cell's id, its folder (for the bundle
    lint), its parsed record and its suite's files: the bundle's copy, or the files it references,
    resolved (repro.suites.references.suite_root); `suite_missing` says why they are not at hand."""

    cell_id: str
    cell_dir: Path
    record: CellRecord
    suite_path: Path | None = None
    suite_missing: str = "the suite's files are not at hand"

    @property
    def suite_dir(self) -> Path:
        """The suite's files; NotAtHand (the rule that reads them is UNCHECKED) when not at hand."""
        if self.suite_path is None:
            raise NotAtHand(self.suite_missing)
        return self.suite_path


RunRule = Callable[[RunEvidence], list[str]]


CellRule = Callable[[CellEvidence], list[str]]


class Rules(BaseModel):
    """The rules of one bundle format: run-level, every cell, and cells that ran (status done)."""

    model_config = {"arbitrary_types_allowed": True}

    run: dict[str, RunRule]
    every_cell: dict[str, CellRule]
    ran_cell: dict[str, CellRule]
