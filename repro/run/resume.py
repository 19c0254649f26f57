"""`--resume`: which groups and cells are left to run, and the finished scenarios an interrupted cell
kept in its partial folder (repro.bundle.layout), which the rerun of the cell does not run again."""

from __future__ import annotations

import contextlib
from pathlib import Path

from repro.bundle.layout.writer import CellWriter
from repro.bundle.records import (
    CellRecord,
    EarlierAttempt,
    KeptScenario,
    PartialCell,
)
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.engines.base import EngineHandle
from repro.run.context import RunContext
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.suites.base import SuiteKind


def groups_to_run(ctx: RunContext, resume: bool) -> list[list[Cell]]:
    """The selected cells by (engine, model) group, without cells a resumed run already has."""
    selected = {c.id for c in ctx.prepared.cells}
    groups = []
    for _, cells in ctx.prepared.plan.groups():
        cells = [c for c in cells if c.id in selected]
        done = [c for c in cells if resume and cell_is_kept(ctx, c.id)]
        ctx.progress.skip_cells(done)
        todo = [c for c in cells if c not in done]
        if todo:
            groups.append(todo)
    return groups


def cell_is_kept(ctx: RunContext, cell_id: str) -> bool:
    """--resume keeps complete, intact cells, except those that ended in an engine fault and those
    the latency gate excluded (a gate verdict measures the machine at one moment, not the cell)."""
    if not ctx.bundle.cell_is_complete(cell_id):
        return False
    record = ctx.bundle.reader.cell(cell_id)
    if gate_excluded(record):
        ctx.progress.note(f"gate again {cell_id}: the latency gate excluded it in the earlier attempt")
        return False
    if cell_needs_rerun(record):
        ctx.progress.note(f"rerun {cell_id}: it ended in an engine fault or error")
        return False
    return True


def cell_needs_rerun(record: CellRecord) -> bool:
    """An error, or a done cell with scenarios that hit engine faults: --resume runs it again."""
    return record.status == "error" or bool(record.summary and record.summary.engine_faults)


def gate_excluded(record: CellRecord) -> bool:
    """A cell the latency gate excluded (not the plan, not the chat template): --resume gates it again."""
    return record.status == "excluded" and record.gate is not None and record.gate.enabled and not record.gate.passed


def partial_of(ctx: RunContext, cell: Cell, suite: SuiteSelection, handle: EngineHandle) -> PartialCell:
    """What the cell's kept scenarios belong to: the run, cell and suite, and what computed them
    (the engine image, identity and execution settings, the GPUs). A kind that keeps none, an
    external harness, leaves its partial folder without any: such a cell is rerun whole."""
    run = ctx.bundle.reader.run()
    return PartialCell(
        run_id=run.run_id,
        matrix_sha256=run.matrix.sha256,
        profile=run.profile,
        commit=run.source.commit,
        harness_digest=run.source.harness_digest,
        cell=cell,
        suite_sha256=suite.sha256,
        suite_ids=suite.ids,
        engine_image_id=ctx.prepared.engines[cell.engine.id].id,
        engine_identity=handle.identity,
        execution=ctx.cell_execution(cell),
        gpu=handle.gpu or None,
    )


def resumed_scenarios(
    ctx: RunContext, cell: Cell, partial: PartialCell
) -> tuple[list[KeptScenario], list[EarlierAttempt], dict[str, str]]:
    """The finished scenarios interrupted attempts at this very cell, on the same engine and
    settings, kept (verified), the attempts they come from and their engine logs, said in one
    line with what is rerun; at least one scenario is always rerun, so this attempt records the
    cell's engine, sandbox and logs."""
    kept, why = ctx.bundle.kept_scenarios(cell.id, partial)
    found = ctx.bundle.earlier_attempts(cell.id, kept) if kept else ([], {})
    if isinstance(found, str):
        kept, why, found = [], found, ([], {})
    if why:
        ctx.progress.note(
            f"rerun {shown(cell.id)} from its first scenario: the interrupted attempt's scenarios are not kept "
            f"({shown(why)})"
        )
    kept = kept[: len(partial.suite_ids) - 1]
    ids = {one.result.id for one in kept}
    attempts = [one.keeping(ids) for one in found[0] if ids & set(one.finished)]
    if kept:
        rest = [i for i in partial.suite_ids if i not in ids]
        ctx.progress.note(
            f"resume {shown(cell.id)}: {len(kept)} finished scenario(s) kept "
            f"({shown(scenario_span([one.result.id for one in kept]))}), {len(rest)} rerun from {shown(rest[0])}"
        )
    return kept, attempts, {one.engine_log: found[1].get(one.engine_log, "") for one in attempts}


def keep_finished(writer: CellWriter, kind: SuiteKind, out_dirs: list[Path], ids: list[str]) -> None:
    """After a scenario's progress line: every scenario a worker has finished that the partial cell
    lacks, kept at once (one atomic write each), so an interrupt loses none of them."""
    for out_dir in out_dirs:
        for scenario in kind.finished(out_dir):
            if scenario.result.id in ids and scenario.result.id not in writer.kept:
                with contextlib.suppress(BadInput):  # an id no file may be named by: not kept, rerun on --resume
                    writer.keep(scenario)


def say_kept(ctx: RunContext, cell: Cell, writer: CellWriter, ids: list[str]) -> None:
    """On an interrupt: what the cell in progress keeps, and where --resume goes on."""
    if not writer.kept:
        return
    rest = [i for i in ids if i not in writer.kept]
    where = f"--resume reruns the {len(rest)} other(s) from {rest[0]}" if rest else "--resume reruns its last scenario"
    ctx.progress.note(
        f"interrupted {shown(cell.id)}: {len(writer.kept)} of {len(ids)} finished scenario(s) kept; {shown(where)}"
    )


def scenario_span(ids: list[str]) -> str:
    """`a` or `a .. c` (the first and last of a run of scenario ids)."""
    return ids[0] if len(ids) == 1 else f"{ids[0]} .. {ids[-1]}"
