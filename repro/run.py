"""`repro matrix run`: plan, then for each (engine, model) group boot, gate, run cells, record, stop.

One engine boot per group. Each cell's harness runs in its own sealed container joined to the
engine's network namespace; its results are read from its output files, never from stdout. Every
container is removed in `finally`; an interrupted run leaves no container and no half cell, and
`--resume` finishes it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from repro.cleanup import cleanup as cleanup_run
from repro.cleanup import leaked_containers
from repro.config import cache_dir
from repro.docker_client import get_client
from repro.engines import boot_engine, stop_engine
from repro.engines.base import EngineHandle, EngineRefused
from repro.errors import BadInput
from repro.gate import GateResult, run_gate
from repro.images import ImageRef, engine_image, harness_image
from repro.matrix import LoadedMatrix, load_matrix
from repro.models import model_path
from repro.plan import Cell, Plan, make_plan
from repro.profiles import Profile, load_profiles
from repro.progress import RunProgress
from repro.provenance import SourceState, source_state, system_description
from repro.redact import Redactor
from repro.results import (
    Bundle,
    CellRecord,
    IdentityCheck,
    ImageInfo,
    MatrixInfo,
    RunRecord,
    mark_latest,
    read_jsonl,
    summarize,
    utc_now,
)
from repro.sandbox import EngineError, bind, container_name, harness_kwargs, read_back, remove_container, wait_for
from repro.suites import SuiteSelection, select

HARNESS_UID = 10001
SCENARIO_MOUNT = "/scenarios"


class RunOptions(BaseModel):
    matrix: Path
    profile: str
    out: Path = Path("results")
    resume: bool = False
    only: list[str] = []
    shard: tuple[int, int] | None = None  # (i, n): this machine runs the i-th of n shards, 1-based


class Prepared(BaseModel):
    """Everything checked before any engine boots: plan, images, models, suites."""

    model_config = {"arbitrary_types_allowed": True}

    loaded: LoadedMatrix
    plan: Plan
    profile: Profile
    cells: list[Cell]
    harness: ImageRef
    engines: dict[str, ImageRef]
    models: dict[str, Path]
    suites: dict[str, SuiteSelection]


def run_matrix(options: RunOptions, progress: RunProgress) -> Path:
    """Run a matrix; return the run folder. Raises BadInput for bad input before anything starts."""
    prepared = prepare(options)
    client = get_client()
    source = source_state()
    run_dir, record, resumed = open_run(options, prepared, source, client)
    bundle = Bundle(run_dir, Redactor())
    if resumed:
        progress.note(f"resuming {record.run_id}: complete, intact cells are kept")
    elif options.resume:
        progress.note("nothing to resume for this matrix, profile and project commit: starting a new run")
    progress.start_run(record.run_id, run_dir, len(prepared.cells))
    try:
        selected = {c.id for c in prepared.cells}
        for _, cells in prepared.plan.groups():
            cells = [c for c in cells if c.id in selected]
            done = [c for c in cells if options.resume and bundle.cell_is_complete(c.id)]
            progress.skip_cells(done)
            todo = [c for c in cells if c not in done]
            if todo:
                run_group(client, prepared, bundle, record.run_id, todo, progress)
        record = record.model_copy(update={"status": "complete"})
    except KeyboardInterrupt:
        record = record.model_copy(update={"status": "interrupted"})
        raise
    finally:
        finish_run(bundle, record, options.out)
        progress.end_run(record.status)
    return run_dir


# ---------------------------------------------------------------- before anything boots


def prepare(options: RunOptions) -> Prepared:
    profiles = load_profiles()
    profile = profiles.get(options.profile)
    loaded = load_matrix(options.matrix, set(profiles.profiles))
    plan = make_plan(loaded, options.profile, profile)
    cells = shard_cells(select_cells(plan, options.only), options.shard)
    engines = {c.engine.id: c.engine for c in cells}
    models = {c.model.id: c.model for c in cells}
    suites = {c.suite.id: c.suite for c in cells}
    return Prepared(
        loaded=loaded,
        plan=plan,
        profile=profile,
        cells=cells,
        harness=harness_image(),
        engines={eid: engine_image(spec, profile.engine_variant) for eid, spec in engines.items()},
        models={model_id: model_path(spec) for model_id, spec in models.items()},
        suites={suite_id: select(spec) for suite_id, spec in suites.items()},
    )


def select_cells(plan: Plan, only: list[str]) -> list[Cell]:
    if not only:
        return list(plan.cells)
    known = {c.id: c for c in plan.cells}
    excluded = {c.id for c in plan.excluded}
    for cell_id in only:
        if cell_id in excluded:
            raise BadInput(f"cell {cell_id} is excluded on profile {plan.profile}")
        if cell_id not in known:
            raise BadInput(f"unknown cell {cell_id} (see: repro matrix plan {plan.matrix_path} --profile {plan.profile})")
    return [c for c in plan.cells if c.id in only]


def shard_cells(cells: list[Cell], shard: tuple[int, int] | None) -> list[Cell]:
    """Round-robin over the plan's order: the same plan and n always give the same split."""
    if shard is None:
        return cells
    index, count = shard
    return [cell for position, cell in enumerate(cells) if position % count == index - 1]


def parse_shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 1 <= int(index) <= int(count):
        raise BadInput(f"--shard {text}: expected i/n with 1 <= i <= n, e.g. 2/4")
    return int(index), int(count)


def open_run(options: RunOptions, prepared: Prepared, source: SourceState, client) -> tuple[Path, RunRecord, bool]:
    """With --resume, the latest run of the same matrix, profile, shard and project source
    (its complete, intact cells are kept); otherwise, or when there is none, a new run folder."""
    shard_text = f"{options.shard[0]}/{options.shard[1]}" if options.shard else None
    previous = find_resumable(options.out, prepared, shard_text, source) if options.resume else None
    if previous is not None:
        run_dir, record = previous
        return run_dir, record.model_copy(update={"status": "running", "finished_at": None}), True
    shard = f"-shard{options.shard[0]}of{options.shard[1]}" if options.shard else ""
    run_id = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{prepared.loaded.matrix.name}-{options.profile}{shard}"
    first_shard = options.shard is None or options.shard[0] == 1
    record = RunRecord(
        run_id=run_id,
        status="running",
        matrix=MatrixInfo(path=str(options.matrix), name=prepared.loaded.matrix.name, sha256=prepared.loaded.sha256),
        profile=options.profile,
        profile_settings=prepared.profile.model_dump(mode="json"),
        source=source,
        system=system_description(client),
        planned_cells=[c.id for c in prepared.cells],
        excluded_cells={c.id: c.excluded or "excluded" for c in prepared.plan.excluded} if first_shard else {},
        shard=f"{options.shard[0]}/{options.shard[1]}" if options.shard else None,
        started_at=utc_now(),
    )
    run_dir = options.out / run_id
    Bundle(run_dir, Redactor()).write_run(record)
    mark_latest(options.out, run_dir)
    return run_dir, record, False


def source_change(before: SourceState, now: SourceState) -> str | None:
    if before.commit != now.commit:
        return f"the project moved from commit {before.commit} to {now.commit}"
    if before.tree_clean != now.tree_clean:
        state = "dirty" if not now.tree_clean else "clean"
        return f"the project tree became {state} ({', '.join(now.dirty_files[:3])})"
    if before.harness_digest != now.harness_digest:
        return "the harness source changed"
    return None


def source_at_end(started: SourceState) -> SourceState:
    """The tree must stay as it was for the whole run: a change during the run makes it dirty."""
    change = source_change(started, source_state())
    if not change:
        return started
    return started.model_copy(update={"tree_clean": False, "dirty_files": [f"changed during the run: {change}", *started.dirty_files]})


def find_resumable(out: Path, prepared: Prepared, shard: str | None, source: SourceState) -> tuple[Path, RunRecord] | None:
    if not out.is_dir():
        return None
    for run_dir in sorted((p for p in out.iterdir() if (p / "run.json").is_file()), reverse=True):
        try:
            record = RunRecord.model_validate_json((run_dir / "run.json").read_text())
        except ValueError:
            continue
        same = record.matrix.sha256 == prepared.loaded.sha256 and record.profile == prepared.plan.profile and record.shard == shard
        same = same and source_change(record.source, source) is None  # never mix results of two code states
        if same and set(c.id for c in prepared.cells) <= set(record.planned_cells):
            return run_dir, record
    return None


def finish_run(bundle: Bundle, record: RunRecord, out: Path) -> None:
    cleanup_run(record.run_id)
    leaks = leaked_containers(record.run_id)
    status = record.status if record.status != "running" else "failed"
    record = record.model_copy(update={"status": status, "finished_at": utc_now(), "leaked_containers": leaks, "source": source_at_end(record.source)})
    bundle.write_run(record)
    bundle.write_manifest()
    mark_latest(out, bundle.dir)


# ---------------------------------------------------------------- one engine, its cells


def run_group(client, prepared: Prepared, bundle: Bundle, run_id: str, cells: list[Cell], progress: RunProgress) -> None:
    first = cells[0]
    handle: EngineHandle | None = None
    progress.start_group(first.engine.id, first.model.id)
    try:
        try:
            handle = boot_engine(
                client,
                first.engine,
                image=prepared.engines[first.engine.id],
                probe_image=prepared.harness,
                model=first.model,
                gguf=prepared.models[first.model.id],
                profile=prepared.profile,
                profile_name=prepared.plan.profile,
                decoding=first.decoding,
                run_id=run_id,
                group_id=f"{first.engine.id}.{first.model.id}",
            )
            progress.engine_ready(handle.boot_seconds)
            gate = run_gate(
                client,
                handle,
                profile=prepared.profile,
                settings=prepared.loaded.matrix.latency_gate,
                decoding=first.decoding,
                protocol=first.protocol,
                probe_image=prepared.harness.id,
            )
            progress.gate(gate)
        except (EngineRefused, EngineError) as error:
            for cell in cells:
                write_failed_cell(bundle, prepared, cell, "error", f"engine: {error}", handle=handle)
                progress.cell_done(cell.id, "error", str(error))
            return
        for cell in cells:
            run_or_exclude(client, prepared, bundle, run_id, cell, handle, gate, progress)
    finally:
        stop_engine(client, handle)


def run_or_exclude(client, prepared: Prepared, bundle: Bundle, run_id: str, cell: Cell, handle: EngineHandle, gate: GateResult, progress: RunProgress) -> None:
    if not gate.passed:
        status = "error" if gate.engine_fault else "excluded"
        write_failed_cell(bundle, prepared, cell, status, f"latency gate: {gate.reason}", handle=handle, gate=gate)
        progress.cell_done(cell.id, status, gate.reason)
        return
    record = run_cell(client, prepared, bundle, run_id, cell, handle, gate, progress)
    progress.cell_done(cell.id, record.status, summary_line(record))


def write_failed_cell(
    bundle: Bundle, prepared: Prepared, cell: Cell, status: str, reason: str, *, handle: EngineHandle | None, gate: GateResult | None = None
) -> None:
    writer = bundle.start_cell(cell.id)
    record = base_record(prepared, cell, handle, gate).model_copy(update={"status": status, "reason": reason, "finished_at": utc_now()})
    writer.finish(record)


def base_record(prepared: Prepared, cell: Cell, handle: EngineHandle | None, gate: GateResult | None) -> CellRecord:
    suite = prepared.suites[cell.suite.id]
    record = CellRecord(
        cell=cell,
        status="done",
        harness_image=image_info(prepared.harness),
        engine_image=image_info(prepared.engines[cell.engine.id]),
        suite_ids=suite.ids,
        suite_sha256=suite.sha256,
        gate=gate.model_dump(mode="json") if gate else None,
        started_at=utc_now(),
    )
    if handle is None:
        return record
    return record.model_copy(
        update={
            "model_sha256_verified": handle.model_sha256,
            "engine_identity": IdentityCheck(
                expected=cell.engine.expected_identity(), reported=handle.identity, matched=handle.identity == cell.engine.expected_identity()
            ),
            "engine_settings": handle.settings,
            "accelerator": handle.accelerator,
        }
    )


def image_info(image: ImageRef) -> ImageInfo:
    return ImageInfo(reference=image.reference, id=image.id, key=image.key, pinned_by=image.pinned_by, labels=dict(image.labels or {}))


# ---------------------------------------------------------------- one cell


def run_cell(client, prepared: Prepared, bundle: Bundle, run_id: str, cell: Cell, handle: EngineHandle, gate: GateResult, progress: RunProgress) -> CellRecord:
    suite = prepared.suites[cell.suite.id]
    record = base_record(prepared, cell, handle, gate)
    writer = bundle.start_cell(cell.id)
    out_dir = Path(tempfile.mkdtemp(prefix="harness-", dir=_scratch()))
    container = None
    try:
        _open_for_harness(out_dir)
        container = client.containers.create(
            **harness_kwargs(
                prepared.harness.id,
                handle.container_id,
                harness_command(cell, handle, suite, prepared.profile),
                out_dir,
                run_id=run_id,
                cell_id=cell.id,
                mounts=[bind(suite.folder, SCENARIO_MOUNT, read_only=True)],
                name=container_name(run_id, "harness", cell.model.id),
            )
        )
        container.start()
        progress.start_cell(cell.id, len(suite.ids))
        exit_code, tail = follow(container, progress, cell.id, harness_timeout(len(suite.ids), prepared.profile))
        engine = client.containers.get(handle.container_id)
        record = record.model_copy(
            update={
                "sandbox": {
                    "harness": read_back(container).model_dump(mode="json"),
                    "engine": read_back(engine).model_dump(mode="json"),
                }
            }
        )
        writer.write_text("harness.log", tail + "\n")
        writer.write_text("engine.log", engine.logs(timestamps=False).decode("utf-8", errors="replace"))
        record = collect_results(writer, record, out_dir, suite, exit_code, tail)
        return writer.finish(record.model_copy(update={"finished_at": utc_now()}))
    except BaseException:
        writer.discard()
        raise
    finally:
        remove_container(container)
        shutil.rmtree(out_dir, ignore_errors=True)


def harness_command(cell: Cell, handle: EngineHandle, suite: SuiteSelection, profile: Profile) -> list[str]:
    decoding = cell.decoding
    return [
        "run",
        "--scenarios",
        SCENARIO_MOUNT,
        "--base-url",
        handle.base_url,
        "--model",
        handle.model_name,
        "--api",
        handle.api,
        "--protocol",
        cell.protocol,
        "--ids",
        *suite.ids,
        "--max-tokens",
        str(decoding.max_tokens),
        "--temperature",
        str(decoding.temperature),
        "--seed",
        str(decoding.seed),
        "--timeout",
        str(profile.step_timeout_s),
        "--out",
        "/out/scenarios.jsonl",
        "--transcripts",
        "/out/transcripts.jsonl",
    ]


def harness_timeout(scenarios: int, profile: Profile) -> float:
    """A generous bound for a hung harness: every scenario at most 15 steps at the step timeout."""
    return 120 + scenarios * 15 * profile.step_timeout_s


def follow(container, progress: RunProgress, cell_id: str, timeout: float) -> tuple[int | None, str]:
    """Feed the progress display from the harness's stdout until it exits or the timeout passes."""
    deadline = time.monotonic() + timeout
    for raw in container.logs(stream=True, follow=True):
        for line in raw.decode("utf-8", errors="replace").splitlines():
            progress.harness_line(cell_id, line)
        if time.monotonic() > deadline:
            break
    remaining = max(1.0, deadline - time.monotonic())
    return wait_for(container, remaining)


def collect_results(writer, record: CellRecord, out_dir: Path, suite: SuiteSelection, exit_code: int | None, tail: str) -> CellRecord:
    rows = read_jsonl(out_dir / "scenarios.jsonl")
    transcripts = read_jsonl(out_dir / "transcripts.jsonl")
    missing = sorted(set(suite.ids) - {row.get("id") for row in rows})
    if exit_code != 0 or missing:
        why = "harness timed out" if exit_code is None else f"harness exited with status {exit_code}"
        if exit_code == 0:
            why = f"harness wrote no result for {', '.join(missing[:5])}"
        return record.model_copy(update={"status": "error", "reason": f"{why}; log tail: {tail[-600:]}"})
    writer.write_jsonl("scenarios.jsonl", rows)
    writer.write_jsonl("transcripts.jsonl", transcripts)
    return record.model_copy(update={"summary": summarize(rows)})


def summary_line(record: CellRecord) -> str:
    if record.summary is None:
        return record.reason or record.status
    return f"{record.summary.passed}/{record.summary.total} passed"


def _scratch() -> Path:
    folder = cache_dir() / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open_for_harness(out_dir: Path) -> None:
    """The harness runs as uid 10001: let it write its one output folder."""
    try:
        os.chown(out_dir, HARNESS_UID, HARNESS_UID)
    except PermissionError:
        os.chmod(out_dir, 0o777)


__all__ = ["RunOptions", "run_matrix", "prepare"]
