"""A run's outcome, read back from its bundle: the exit status and the last line (`run_outcome`),
from one computation, with the cause of each cell the latency gate excluded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from repro.bundle.layout.reader import BundleReader
from repro.core.errors import BadInput
from repro.engines.gate import gate_cause
from repro.run.resume import cell_needs_rerun, gate_excluded
from repro.spec.profiles import Profile

EXIT_OK = 0
EXIT_FAULT = 1  # a cell ended in an engine fault (or another error), or the latency gate excluded it
EXIT_INTERRUPTED = 130


class RunOutcome(BaseModel):
    """How a run ended, computed once from its bundle: the exit status, the run's status, and the
    planned cells that did not complete by cause (`gate:<cause>` for a latency gate exclusion, by
    what the gate measured; `fault`, `excluded` by the chat template, `missing`)."""

    status: int
    run_status: str
    causes: dict[str, int] = {}


def run_outcome(run_dir: Path) -> RunOutcome:
    """0 when every planned cell completed without engine faults; 1 when a cell ended in an
    engine fault or error, was excluded (by the latency gate, for the cause it measured, or by
    the chat template), or is missing; 130 when interrupted."""
    bundle = BundleReader(run_dir)
    record = bundle.run()
    causes = Counter(
        cause
        for cause in (cell_cause(bundle, cell_id, record.profile_settings) for cell_id in record.planned_cells)
        if cause
    )
    if record.status == "interrupted":
        status = EXIT_INTERRUPTED
    else:
        status = EXIT_FAULT if record.status != "complete" or causes else EXIT_OK
    return RunOutcome(status=status, run_status=record.status, causes=dict(causes))


def cell_cause(bundle: BundleReader, cell_id: str, profile: Profile) -> str | None:
    """Why a planned cell did not complete (None when it did); a gate that recorded no cause (an
    older bundle) is read from its attempts."""
    try:
        cell = bundle.cell(cell_id)
    except BadInput:
        return "missing"
    if gate_excluded(cell) and cell.gate is not None:
        return f"gate:{cell.gate.cause or gate_cause(cell.gate, profile) or 'unknown'}"
    if cell.status == "excluded":
        return "excluded"
    return "fault" if cell.status != "done" or cell_needs_rerun(cell) else None


def run_exit_status(run_dir: Path) -> int:
    return run_outcome(run_dir).status
