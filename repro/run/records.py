"""The records a run writes of a cell that did not run to the end (an engine fault, the gate, an
error), what every cell record starts from, and the line a finished cell shows."""

from __future__ import annotations

from repro.bundle.records import (
    CellRecord,
    EngineIncident,
    EngineSettings,
    IdentityCheck,
    ImageInfo,
    utc_now,
)
from repro.engines.base import EngineHandle
from repro.run.context import Prepared, RunContext
from repro.spec.cells import Cell
from repro.spec.findings import GateResult
from repro.store.images import ImageRef


def write_failed_cell(
    ctx: RunContext,
    cell: Cell,
    status: str,
    reason: str,
    *,
    handle: EngineHandle | None,
    gate: GateResult | None = None,
) -> None:
    record_failed_cell(ctx, cell, status, reason, handle=handle, gate=gate)
    ctx.progress.cell_done(cell.id, status, reason)


def record_failed_cell(
    ctx: RunContext,
    cell: Cell,
    status: str,
    reason: str,
    *,
    handle: EngineHandle | None,
    gate: GateResult | None = None,
    incidents: list[EngineIncident] | None = None,
) -> CellRecord:
    writer = ctx.bundle.start_cell(cell.id)
    update = {"status": status, "reason": reason, "finished_at": utc_now(), "engine_incidents": list(incidents or [])}
    record = base_record(ctx.prepared, cell, handle, gate).model_copy(update=update)
    return writer.finish(record.model_copy(update={"exclusion_kind": record.evidenced_kind}))


def base_record(prepared: Prepared, cell: Cell, handle: EngineHandle | None, gate: GateResult | None) -> CellRecord:
    suite = prepared.selection(cell)
    record = CellRecord(
        cell=cell,
        status="done",
        harness_image=image_info(prepared.harness_for(cell)),
        engine_image=image_info(prepared.engines[cell.engine.id]),
        suite_ids=suite.ids,
        suite_sha256=suite.sha256,
        gate=gate,
        started_at=utc_now(),
    )
    if handle is None:
        return record
    expected = cell.engine.expected_identity()
    return record.model_copy(
        update={
            "model_sha256_verified": handle.model_sha256,
            "engine_identity": IdentityCheck(
                expected=expected, reported=handle.identity, matched=handle.identity == expected
            ),
            "engine_settings": EngineSettings(reported=handle.settings),
            "accelerator": handle.accelerator,
            "gpu": handle.gpu or None,
            "engine_boot_seconds": handle.boot_seconds,
            "engine_audit": handle.audit,
            "engine_kernels": handle.kernels,
        }
    )


def image_info(image: ImageRef) -> ImageInfo:
    return ImageInfo(
        reference=image.reference,
        id=image.id,
        key=image.key,
        pinned_by=image.pinned_by,
        labels=dict(image.labels or {}),
    )


def summary_line(record: CellRecord) -> str:
    if record.summary is None:
        return record.reason or record.status
    return f"{record.summary.passed}/{record.summary.total} passed"
