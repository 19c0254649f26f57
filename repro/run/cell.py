"""One cell: its workers' sealed harness containers on the group's engine, fed the suite kind's
command, their outputs collected by the kind into the cell's records, the sandbox audited, the
engine watched throughout."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

from harness.contracts import SandboxAudit
from repro.bundle.layout.names import ENGINE_LOG, HARNESS_LOG
from repro.bundle.layout.writer import CellWriter
from repro.bundle.records import (
    CellRecord,
    EngineIncident,
    SandboxRecord,
    utc_now,
)
from repro.containers import lifecycle as containers
from repro.containers.audit import audit_command, run_audit
from repro.containers.sandbox import container_name, harness_kwargs, read_back, writable_by_sandbox
from repro.core.files import scratch_dir
from repro.engines.base import Engine, EngineHandle
from repro.engines.logs import joined_logs
from repro.engines.registry import engine_for
from repro.plan.replicas import deal
from repro.run.context import GroupEngine, RunContext
from repro.run.healing import blame_engine, engine_container, engine_watch, require_answering
from repro.run.records import base_record
from repro.run.resume import keep_finished, partial_of, resumed_scenarios, say_kept
from repro.runtimes.wire import keep_wire
from repro.spec.cells import Cell
from repro.spec.findings import SandboxSettings, SuiteSelection
from repro.spec.profiles import Profile
from repro.suites.base import SCENARIO_MOUNT, CellOutputs
from repro.suites.registry import kind_of


def run_cell(
    ctx: RunContext, cell: Cell, group: GroupEngine, incidents: list[EngineIncident] | None = None
) -> CellRecord:
    """Audit the sandbox, run the cell's harness workers while watching the engines, record the
    cell. EngineLost (nothing of the cell kept) when an engine died or stopped answering meanwhile."""
    suite, kind = ctx.prepared.selection(cell), kind_of(cell.suite)
    partial = partial_of(ctx, cell, suite, group.handle)
    kept, attempts, logs = resumed_scenarios(ctx, cell, partial)
    kept_ids = [one.result.id for one in kept]
    update = {
        "engine_incidents": list(incidents or []),
        "execution": ctx.cell_execution(cell),
        "resumed_kept": kept_ids,
        "earlier_attempts": attempts,
    }
    record = base_record(ctx.prepared, cell, group.handle, group.gate).model_copy(update=update)
    engines = [engine_container(ctx.client, handle) for handle in group.handles]
    watch = watch_all(engines)
    shares = deal([i for i in suite.ids if i not in kept_ids], ctx.execution.workers)
    writer = ctx.bundle.start_cell(cell.id, partial, kept)
    writer.carry(attempts, logs)
    out_dirs: list[Path] = []
    try:
        out_dirs += [harness_output_dir() for _ in shares]
        with blame_engine(watch):
            watch()  # an engine may have died between cells
            record = record.model_copy(update={"sandbox_audit": audit_cell(ctx, cell, group, suite, watch)})
            writer.start_clock()
            harness, ended = run_workers(
                ctx, cell, group, shares, out_dirs, watch, lambda: keep_finished(writer, kind, out_dirs, suite.ids)
            )
            sandbox = SandboxRecord(harness=harness, engine=read_back(engines[0]))
            record = record.model_copy(
                update={"sandbox": sandbox, "harness_seconds": round(max(e.seconds for e in ended), 3)}
            )
            writer.write_text(HARNESS_LOG, joined_logs("worker", [e.log_tail for e in ended]) + "\n")
            writer.write_text(ENGINE_LOG, engine_logs(engines))
        record = kind.collect(writer, record, suite, CellOutputs(out_dirs, ended, kept))
        if cell.runtime is not None and cell.driven_runtime is None:  # our client's wire
            keep_wire(writer, out_dirs, suite.ids)
        if engine_suspect(record, ended):
            with blame_engine(watch):
                for engine, handle in zip(engines, group.handles, strict=True):
                    require_answering(engine, health_check(ctx, cell, handle))
        return writer.finish(record.model_copy(update={"finished_at": utc_now()}))
    except KeyboardInterrupt:
        keep_engine_log(writer, engines)
        say_kept(ctx, cell, writer, suite.ids)
        raise
    except BaseException:
        writer.discard()
        raise
    finally:
        for out_dir in out_dirs:
            shutil.rmtree(out_dir, ignore_errors=True)


def engine_logs(engines: list) -> str:
    """The engines' logs as the cell keeps them: one, or each replica's under its own line."""
    return joined_logs("replica", [e.logs(timestamps=False).decode("utf-8", errors="replace") for e in engines])


def keep_engine_log(writer: CellWriter, engines: list) -> None:
    """On an interrupt: the attempt's engine log, kept beside its finished scenarios as their
    evidence (a resume refuses to keep scenarios whose attempt left no log)."""
    if writer.kept:
        with contextlib.suppress(Exception):  # a daemon gone: no log, so a resume reruns the cell whole
            writer.write_text(ENGINE_LOG, engine_logs(engines))


def run_workers(
    ctx: RunContext,
    cell: Cell,
    group: GroupEngine,
    shares: list[list[str]],
    out_dirs: list[Path],
    watch: containers.Watch,
    keep: Callable[[], None] = lambda: None,
) -> tuple[SandboxSettings, list[containers.Exit]]:
    """One harness container per share of the scenarios, all at once, worker i on replica i mod K
    (each joined to its replica's namespace); the first's settings read back, and how each ended;
    `keep` after each finished scenario. Every container is removed on the way out."""
    suite = ctx.prepared.selection(cell)
    handles = group.handles
    with contextlib.ExitStack() as stack:
        started = []
        for index, (ids, out_dir) in enumerate(zip(shares, out_dirs, strict=True)):
            handle = handles[index % len(handles)]
            kind = kind_of(cell.suite)
            command = kind.command(cell, handle.client_argv(), suite, ctx.prepared.profile, ids)
            entrypoint = kind.entrypoint(cell)
            kwargs = cell_kwargs(ctx, cell, handle, suite, command, out_dir) | (
                {"entrypoint": entrypoint} if entrypoint else {}
            )
            started.append(stack.enter_context(containers.started(ctx.client, kwargs)))
        ctx.progress.start_cell(cell, sum(len(ids) for ids in shares))
        deadline = harness_deadline(max(len(ids) for ids in shares), ctx.prepared.profile)
        ended = containers.wait_all(
            started, deadline, on_line=lambda line: feed_progress(ctx, cell, line, keep), watch=watch
        )
        return read_back(started[0]), ended


def watch_all(engines: list) -> containers.Watch:
    """A `containers.wait` watch over every replica: EngineLost as soon as one is not running."""
    watches = [engine_watch(engine) for engine in engines]

    def watch() -> None:
        for one in watches:
            one()

    return watch


def cell_kwargs(
    ctx: RunContext, cell: Cell, handle: EngineHandle, suite: SuiteSelection, command: list[str], out_dir: Path
) -> dict:
    """A container with the cell's harness settings (the harness itself, or its sandbox audit),
    joined to the namespace of the engine `handle` names."""
    return harness_kwargs(
        ctx.prepared.harness_for(cell).id,
        handle.container_id,
        command,
        out_dir,
        run_id=ctx.run_id,
        cell_id=cell.id,
        mounts=kind_of(cell.suite).mounts(suite),
        name=container_name(ctx.run_id, "harness", cell.model.id),
    )


def audit_cell(
    ctx: RunContext, cell: Cell, group: GroupEngine, suite: SuiteSelection, watch: containers.Watch
) -> SandboxAudit:
    """The sandbox audit, run with the harness container's exact settings in the engine's namespace."""
    out_dir = harness_output_dir()
    try:
        return run_audit(
            ctx.client,
            cell_kwargs(ctx, cell, group.handle, suite, audit_command([SCENARIO_MOUNT]), out_dir),
            out_dir,
            watch,
        )
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def engine_suspect(record: CellRecord, ended: list[containers.Exit]) -> bool:
    """Did the harness end in a way a dead or silent engine explains (faults, no finish)?"""
    return any(e.timed_out or e.code != 0 for e in ended) or bool(record.summary and record.summary.engine_faults)


def health_check(ctx: RunContext, cell: Cell, handle: EngineHandle) -> Callable[[float], object]:
    """Ask one replica's health path from inside its namespace (for `require_answering`)."""
    return lambda timeout: engine_for_group(ctx, cell).wait_ready(handle, timeout)


def engine_for_group(ctx: RunContext, cell: Cell) -> Engine:
    return engine_for(
        ctx.client,
        cell.engine,
        probe_image=ctx.prepared.harness,
        run_id=ctx.run_id,
        group_id=f"{cell.engine.id}.{cell.model.id}",
    )


def feed_progress(ctx: RunContext, cell: Cell, line: str, keep: Callable[[], None] = lambda: None) -> None:
    event = kind_of(cell.suite).progress(line)
    if event is not None:
        ctx.progress.scenario_done(cell.id, event)
        keep()


def harness_deadline(scenarios: int, profile: Profile) -> float:
    """A generous bound for a hung harness: every scenario at most 15 steps at the step timeout."""
    return 120 + scenarios * 15 * profile.step_timeout_s


def harness_output_dir() -> Path:
    """A scratch folder the harness (the sandbox user) can write, and nothing else."""
    return writable_by_sandbox(scratch_dir("harness-"))
