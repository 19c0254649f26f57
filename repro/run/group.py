"""One engine group: boot the engine (its replicas), gate it, run each cell on it (healing an engine
that dies or stops answering: repro.run.healing), stop it; a group whose engine cannot serve
records each of its cells as failed, with why."""

from __future__ import annotations

from repro.bundle.records import (
    CellRecord,
    EngineIncident,
)
from repro.containers.client import daemon_unanswering, wait_for_daemon
from repro.containers.sandbox import EngineDied
from repro.core.files import short_error
from repro.core.terminal import shown
from repro.engines.base import EngineHandle, stop_engine
from repro.engines.boot import BootSpec
from repro.engines.errors import EngineRefused
from repro.engines.gate import CAUSE_TEXT, gate_with_retries, run_gate
from repro.engines.registry import boot_engine
from repro.run.cell import run_cell
from repro.run.context import GroupEngine, RunContext
from repro.run.healing import MAX_CELL_RERUNS, EngineLost, describe, heal, unhealed_reason
from repro.run.records import record_failed_cell, summary_line, write_failed_cell
from repro.spec.cells import Cell
from repro.spec.findings import GateResult
from repro.store.chat_template import engine_template_problem, server_blocker


def run_group(ctx: RunContext, cells: list[Cell]) -> None:
    """Boot and gate the group's engine, run its cells (healing the engine when it dies), stop it."""
    first = cells[0]
    ctx.progress.start_group(first.engine.id, first.model.id)
    booted: list[EngineHandle] = []  # every engine this group booted; all are stopped at the end
    try:
        try:
            group = boot_and_gate(ctx, first, booted)
        except Exception as error:
            if not isinstance(error, EngineRefused | EngineDied) and not daemon_unanswering(error):
                raise
            for cell in cells:
                why = (
                    str(error)
                    if isinstance(error, EngineRefused | EngineDied)
                    else f"the Docker daemon did not answer ({short_error(error)})"
                )
                write_failed_cell(ctx, cell, "error", f"engine: {why}", handle=booted[-1] if booted else None)
            return
        for index, cell in enumerate(cells):
            healthy = run_or_exclude(ctx, cell, group, booted)
            if healthy is None:
                give_up_group(ctx, cell, cells[index + 1 :], group)
                return
            group = healthy
    finally:
        for handle in booted:
            stop_engine(ctx.client, handle)


def boot_and_gate(ctx: RunContext, cell: Cell, booted: list[EngineHandle]) -> GroupEngine:
    """Boot the group's engine replicas one after another, then gate the first; on any failure
    the replicas booted so far are stopped before the error propagates."""
    handles: list[EngineHandle] = []
    try:
        for replica in range(ctx.replicas):
            handle = boot_group_engine(ctx, cell, replica)
            booted.append(handle)
            handles.append(handle)
            ctx.progress.engine_ready(handle.boot_seconds)
        gate = gate_group_engine(ctx, cell, handles[0])
    except BaseException:
        for handle in handles:
            stop_engine(ctx.client, handle)
        raise
    ctx.progress.gate(gate)
    return GroupEngine(handle=handles[0], gate=gate, others=handles[1:])


def stop_group(ctx: RunContext, group: GroupEngine) -> None:
    for handle in group.handles:
        stop_engine(ctx.client, handle)


def give_up_group(ctx: RunContext, failed: Cell, rest: list[Cell], group: GroupEngine) -> None:
    """The engine could not be healed: say so, end the group's other cells as engine faults."""
    first = failed.engine.id, failed.model.id
    ctx.progress.note(
        f"[red]engine {first[0]} with model {first[1]} could not be booted again[/]: cell {failed.id} ended as an "
        f"engine fault{f' and its {len(rest)} other cells are not run' if rest else ''}; "
        "going on with the next group (rerun them with --resume)"
    )
    for cell in rest:
        reason = (
            f"engine fault: the group's engine died during cell {failed.id} and could not be healed; "
            "rerun with --resume"
        )
        write_failed_cell(ctx, cell, "error", reason, handle=group.handle, gate=group.gate)


def boot_group_engine(ctx: RunContext, cell: Cell, replica: int = 0) -> EngineHandle:
    prepared = ctx.prepared
    return boot_engine(
        ctx.client,
        BootSpec(
            spec=cell.engine,
            image=prepared.engines[cell.engine.id],
            probe_image=prepared.harness,
            model=cell.model,
            gguf=prepared.models[cell.model.id],
            profile=prepared.profile,
            profile_name=prepared.plan.profile,
            decoding=cell.decoding,
            run_id=ctx.run_id,
            group_id=f"{cell.engine.id}.{cell.model.id}",
            replica=replica,
        ),
    )


# The gate measures the machine, not the model's protocol skills: it always asks for a step under
# the JSON schema, which the engine's grammar makes well-formed whatever the model, so a model that
# cannot write (say) native tool calls is scored as such in its cells, never excluded as "slow".
GATE_PROTOCOL = "json_schema"


def gate_group_engine(ctx: RunContext, cell: Cell, handle: EngineHandle) -> GateResult:
    prepared = ctx.prepared
    settings = prepared.loaded.matrix.latency_gate
    profile = prepared.profile

    def measure() -> GateResult:
        return run_gate(
            ctx.client,
            handle,
            profile=profile,
            settings=settings,
            decoding=cell.decoding,
            protocol=GATE_PROTOCOL,
            probe_image=prepared.harness.id,
        )

    return gate_with_retries(measure, profile, note=ctx.progress.note)


def run_or_exclude(ctx: RunContext, cell: Cell, group: GroupEngine, booted: list[EngineHandle]) -> GroupEngine | None:
    """Run (or exclude) one cell; the group's engine afterwards, None when it could not be healed."""
    if not group.gate.passed:
        status = "error" if group.gate.engine_fault else "excluded"
        cause = f" ({CAUSE_TEXT[group.gate.cause]})" if group.gate.cause else ""
        write_failed_cell(
            ctx, cell, status, f"latency gate{cause}: {group.gate.reason}", handle=group.handle, gate=group.gate
        )
        return group
    refused = boot_preflight(ctx, cell, group.handle)
    if refused is not None:
        write_failed_cell(ctx, cell, refused[0], refused[1], handle=group.handle, gate=group.gate)
        return group
    record, healthy = run_healing(ctx, cell, group, booted)
    ctx.progress.cell_done(cell.id, record.status, summary_line(record))
    return healthy


def boot_preflight(ctx: RunContext, cell: Cell, handle: EngineHandle) -> tuple[str, str] | None:
    """What the booted engine itself says about the cell's chat template: (status, reason) when
    the cell cannot be scored. A template other than the pinned or embedded one (a built-in
    fallback) is an error; a protocol the engine's template capabilities cannot carry is a
    configuration exclusion, never the model's failure."""
    if not cell.engine.facts.template_from_gguf:
        return None
    wrong = engine_template_problem(
        ctx.prepared.templates.get(cell.model.id), handle.settings.get("chat_template_sha256")
    )
    if wrong:
        return "error", wrong
    blocker = server_blocker(handle.settings.get("chat_template_caps"), cell.protocol)
    return ("excluded", blocker) if blocker else None


def run_healing(
    ctx: RunContext, cell: Cell, group: GroupEngine, booted: list[EngineHandle]
) -> tuple[CellRecord, GroupEngine | None]:
    """Run a cell; when its engine dies or stops answering, heal it and rerun the whole cell.
    A cell whose engine cannot be healed (or dies too often) ends as an engine fault at once."""
    incidents: list[EngineIncident] = []
    while True:
        try:
            return run_cell(ctx, cell, group, incidents), group
        except EngineLost as lost:
            ctx.progress.say(f"  [red]engine fault[/] during {shown(cell.id)}: {shown(describe(lost.fault))}")
            stop_group(ctx, group)
            boot, stop = (lambda: boot_and_gate(ctx, cell, booted)), (lambda g: stop_group(ctx, g))
            healed, incident = heal(
                lost.fault, boot, stop, ctx.progress.note, daemon=lambda: wait_for_daemon(ctx.client)
            )
            incidents.append(incident)
            if healed is None or len(incidents) > MAX_CELL_RERUNS:
                record = record_failed_cell(
                    ctx,
                    cell,
                    "error",
                    unhealed_reason(incidents),
                    handle=group.handle,
                    gate=group.gate,
                    incidents=incidents,
                )
                return record, healed
            ctx.progress.note(f"  engine healed: rerunning {cell.id} from its first scenario")
            group = healed
