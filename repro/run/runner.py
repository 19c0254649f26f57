"""`repro matrix run`: plan, then for each (engine, model) group boot, gate, run cells, record, stop.

Read top to bottom: `run_matrix` prepares everything that can be checked before an engine boots,
opens (or resumes) the bundle, then runs one group at a time (repro.run.group). A group boots its
engine once, gates it, and runs each cell's harness (repro.run.cell) in its own sealed container
joined to the engine's network namespace; results are read from the harness's output files (as
untrusted input), never from stdout. A dirty project tree is refused before anything starts (unless --allow-dirty, which
marks the run not clean-room from the start). Every container is removed on the way out; an
interrupted run leaves no container and no half cell: the cell in progress keeps its finished
scenarios in its partial folder (repro.bundle.layout), and `--resume` reruns only the rest
(repro.run.resume).
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from pathlib import Path

from repro.bundle.layout.discovery import find_resumable
from repro.bundle.layout.names import AUTHOR_PROFILES_COPY
from repro.bundle.layout.writer import Bundle, DiskFull, mark_latest
from repro.bundle.provenance import (
    author_at_end,
    author_source,
    dirty_lines,
    source_at_end,
    source_state,
    system_description,
)
from repro.bundle.records import (
    MatrixInfo,
    RunRecord,
    SourceState,
    utc_now,
)
from repro.bundle.redact import Redactor
from repro.containers.cleanup import cleanup as cleanup_run
from repro.containers.cleanup import leaked_containers
from repro.containers.client import DockerClient, daemon_unanswering, get_client
from repro.core.errors import BadInput
from repro.core.files import short_error
from repro.core.terminal import shown
from repro.core.yamlsource import MAX_YAML_BYTES, read_bounded
from repro.engines.devices import host_cpus_of
from repro.plan.planner import listed_exclusions, select_cells, shard_cells, stored_plan
from repro.plan.replicas import replica_allowance, replica_count
from repro.run.context import Prepared, RunContext, RunOptions, suite_base, suite_image_key
from repro.run.group import run_group
from repro.run.progress import RunProgress
from repro.run.resume import groups_to_run
from repro.runtimes.image import runtime_image
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.matrix import LoadedMatrix
from repro.store.images import engine_image, harness_image
from repro.store.models import model_path
from repro.suites.registry import kind_of


def run_matrix(options: RunOptions, progress: RunProgress) -> Path:
    """Run a matrix; return the run folder. Raises BadInput for bad input before anything starts."""
    source = source_state()
    # before models, images or Docker are asked for
    dirty = dirty_lines(source, author_source(load_matrix(options.matrix)))
    refuse_dirty(dirty, options.allow_dirty)
    prepared = prepare(options)
    client = get_client()
    replicas = choose_replicas(options, prepared, client)
    run_dir, record, resumed = open_run(options, prepared, source, client)
    ctx = RunContext(
        client=client,
        prepared=prepared,
        bundle=Bundle(run_dir, Redactor()),
        run_id=record.run_id,
        progress=progress,
        replicas=replicas,
    )
    if resumed:
        progress.note(f"resuming {record.run_id}: complete, intact cells are kept")
    elif options.resume:
        progress.note("nothing to resume for this matrix, profile and project commit: starting a new run")
    progress.start_run(
        record.run_id, run_dir, prepared.cells, {c.id: len(prepared.selection(c).ids) for c in prepared.cells}
    )
    if dirty:
        progress.note(
            f"[yellow]not a clean-room run[/] (--allow-dirty): {shown('; '.join(dirty))}; "
            "repro check will call every cell INVALID"
        )
    progress.note(
        f"engines: {ctx.execution.label()}; {replicas} replica(s) per group, "
        f"{ctx.execution.workers} harness worker(s) per cell"
    )
    try:
        signal.signal(signal.SIGTERM, interrupt)  # a scheduler's stop ends the run as Ctrl-C does
        for cells in groups_to_run(ctx, options.resume):
            run_group(ctx, cells)
        record = record.model_copy(update={"status": "complete"})
    except KeyboardInterrupt:
        record = record.model_copy(update={"status": "interrupted"})
        raise
    finally:
        finish_run(ctx, record, options.out)
        progress.end_run(record.status)
    return run_dir


def first_disk_full(error: BaseException) -> BaseException:
    """The first full-disk error of a run: the cell it stopped, not run.json written after it
    (`finish_run` writes the record on the way out, and a full disk fails that write too)."""
    first, cause = error, error.__context__
    while cause is not None:
        first = cause if isinstance(cause, DiskFull) else first
        cause = cause.__context__
    return first


def refuse_dirty(dirty: list[str], allow_dirty: bool) -> None:
    """Before anything starts: uncommitted or untracked, unignored files (the project's, or the
    author's) make every cell INVALID (repro check's provenance rule reads the same records), so
    such a run is refused."""
    if dirty and not allow_dirty:
        raise BadInput(
            f"{'; '.join(dirty)}: commit or remove them (or ignore them in .gitignore), "
            "or run anyway with --allow-dirty (not a clean-room run)"
        )


def choose_replicas(options: RunOptions, prepared: Prepared, client: DockerClient) -> int:
    """Engine replicas per group: --replicas, or as many as the Docker host's cores (and the GPU
    memory, for the largest model) hold; BadInput when asked for more (repro.plan.replicas)."""
    largest = max(c.model.file_size for c in prepared.cells)
    allowance = max(gpu_allowance(prepared, c) for c in prepared.cells) if prepared.profile.gpu_count > 0 else None
    return replica_count(
        options.replicas, prepared.profile, host_cpus=host_cpus_of(client), model_bytes=largest, gpu_bytes=allowance
    )


def gpu_allowance(prepared: Prepared, cell: Cell) -> int:
    """The GPU memory one replica of the cell's model needs at the cell's context (its GGUF's
    shape read from the header; weights plus 1 GiB when the header cannot be read)."""
    from repro.store.gguf import read_header

    try:
        header = read_header(prepared.models[cell.model.id])
    except (BadInput, KeyError):
        return replica_allowance(cell.model.file_size, {}, 0, 0)
    return replica_allowance(
        cell.model.file_size, header.shape, cell.decoding.context * prepared.profile.slots, len(header.tokens)
    )


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's cancel, `docker stop`, `kill`): stop as on Ctrl-C, so the run's
    containers are removed and its bundle is closed as interrupted, ready for --resume."""
    raise KeyboardInterrupt


def prepare(options: RunOptions) -> Prepared:
    loaded, profiles = load_matrix_and_profiles(options.matrix)
    profile = profiles.get(options.profile).with_prompt_cache(options.prompt_cache)
    plan, templates = stored_plan(loaded, options.profile, profile, require_all=options.shard is not None)
    cells = shard_cells(select_cells(plan, options.only), options.shard)
    if not cells:
        raise BadInput(f"nothing to run: no cell of {options.matrix} on profile {options.profile} is selected")
    suites = {c.suite.id: kind_of(c.suite).select(c.suite, loaded.suite_root(c.suite)) for c in cells}
    refuse_unpinned_suites(cells, suites)
    refuse_empty_parts(cells, suites)
    refuse_unfit(cells, suites)
    harness = harness_image()
    runtimes = {c.runtime.id: runtime_image(c.runtime, harness=harness) for c in cells if c.runtime}
    return Prepared(
        loaded=loaded,
        plan=plan,
        profile=profile,
        cells=cells,
        harness=harness,
        suite_images={
            suite_image_key(c): kind_of(c.suite).image(c.suite, suite_base(c, harness, runtimes)) for c in cells
        },
        runtime_images=runtimes,
        engines={
            c.engine.id: engine_image(c.engine, profile.engine_variant, compute_capability=profile.compute_capability)
            for c in cells
        },
        models={c.model.id: model_path(c.model) for c in cells},
        suites=suites,
        templates=templates,
    )


def refuse_unpinned_suites(cells: list[Cell], suites: dict[str, SuiteSelection]) -> None:
    """Before any engine boots: a suite the matrix pins by sha256 selects exactly those files."""
    pins = {c.suite.id: c.suite.sha256 for c in cells if c.suite.sha256}
    wrong = [
        f"suite {sid}: the selected scenario files hash to {suites[sid].sha256[:12]}, the matrix pins {pin[:12]}"
        for sid, pin in pins.items()
        if suites[sid].sha256 != pin
    ]
    if wrong:
        raise BadInput(wrong[0], lines=wrong)


def refuse_empty_parts(cells: list[Cell], suites: dict[str, SuiteSelection]) -> None:
    """Before any engine boots: a suite split into more parts than it selects scenarios."""
    wrong = [
        f"suite {c.suite.id} selects {len(suites[c.suite.id].ids)} scenario(s), fewer than its {c.suite.parts} parts"
        for c in cells
        if c.suite.parts and len(suites[c.suite.id].ids) < c.suite.parts
    ]
    if wrong:
        raise BadInput(wrong[0])


def refuse_unfit(cells: list[Cell], suites: dict[str, SuiteSelection]) -> None:
    """Before any engine boots: what each suite's kind refuses (for our scenarios: every selected
    scenario loads, its reference passes, and doing nothing does not pass it); BadInput naming each."""
    kinds = {c.suite.id: kind_of(c.suite) for c in cells}
    problems = [p for suite_id, selection in suites.items() for p in kinds[suite_id].refuse_unfit(selection)]
    if problems:
        message = f"{len(problems)} scenario(s) cannot score a model; fix or deselect them"
        raise BadInput(message, lines=[message, *problems[:20]])


def open_run(
    options: RunOptions, prepared: Prepared, source: SourceState, client: DockerClient
) -> tuple[Path, RunRecord, bool]:
    """With --resume, the latest run of the same matrix, profile, shard and project source
    (its complete, intact cells are kept); otherwise, or when there is none, a new run folder."""
    if options.resume:
        previous = find_resumable(
            options.out,
            prepared.loaded.sha256,
            options.profile,
            options.shard_text,
            {c.id for c in prepared.cells},
            source,
            prepared.profile,
        )
        if previous is not None:
            run_dir, record = previous
            return run_dir, record.model_copy(update={"status": "running", "finished_at": None}), True
    record = new_run_record(options, prepared, source, client)
    run_dir = options.out / record.run_id
    bundle = Bundle(run_dir, Redactor())
    bundle.embed_matrix(read_bounded(options.matrix, MAX_YAML_BYTES), prepared.loaded.sha256)
    if record.author is not None and record.author.profiles_file is not None:
        own = record.author.profiles_file
        bundle.embed_matrix(
            read_bounded(prepared.loaded.root / own.path, MAX_YAML_BYTES), own.sha256, name=AUTHOR_PROFILES_COPY
        )
    inputs = []
    for suite_id, selection in prepared.suites.items():
        suite = next(c.suite for c in prepared.cells if c.suite.id == suite_id)
        inputs += kind_of(suite).embed(bundle, suite, selection)
    record = record.model_copy(update={"inputs": inputs})
    bundle.write_run(record)
    mark_latest(options.out, run_dir)
    return run_dir, record, False


def matrix_name(loaded: LoadedMatrix, given: Path) -> str:
    """The matrix as run.json names it: as given, or, for a matrix kept outside the project, its
    path in its own folder (run.json author holds the rest; a host path would not travel)."""
    return loaded.path.name if loaded.outside else str(given)


def new_run_record(options: RunOptions, prepared: Prepared, source: SourceState, client: DockerClient) -> RunRecord:
    shard = f"-shard{options.shard[0]}of{options.shard[1]}" if options.shard else ""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    excluded, kinds = listed_exclusions(prepared.plan, options.shard)
    return RunRecord(
        run_id=f"{stamp}-{prepared.loaded.matrix.name}-{options.profile}{shard}",
        status="running",
        matrix=MatrixInfo(
            path=matrix_name(prepared.loaded, options.matrix),
            name=prepared.loaded.matrix.name,
            sha256=prepared.loaded.sha256,
        ),
        profile=options.profile,
        profile_settings=prepared.profile,
        source=source,
        author=author_source(prepared.loaded),
        dirty_allowed=bool(dirty_lines(source, author_source(prepared.loaded))),
        system=system_description(client),
        planned_cells=[c.id for c in prepared.cells],
        excluded_cells=excluded,
        excluded_kinds=kinds,
        shard=options.shard_text,
        only=list(options.only),
        chat_templates=prepared.templates,
        started_at=utc_now(),
        prompt_cache=options.prompt_cache,
    )


def finish_run(ctx: RunContext, record: RunRecord, out: Path) -> None:
    """Remove the run's containers, audit for leaks, close run.json and the manifest; when the
    Docker daemon does not answer, the leak audit says so and the bundle is closed all the same."""
    try:
        cleanup_run(record.run_id)
        leaks = leaked_containers(record.run_id)
    except Exception as error:
        if not daemon_unanswering(error):
            raise
        leaks = [
            f"unknown: the Docker daemon did not answer ({short_error(error)}); run: "
            f"repro cleanup --run-id {record.run_id}"
        ]
    status = record.status if record.status != "running" else "failed"
    update = {
        "status": status,
        "finished_at": utc_now(),
        "leaked_containers": leaks,
        "source": source_at_end(record.source),
        "author": author_at_end(record.author, ctx.prepared.loaded),
    }
    ctx.bundle.write_run(record.model_copy(update=update))
    ctx.bundle.write_manifest()
    mark_latest(out, ctx.bundle.dir)


__all__ = ["prepare", "run_matrix"]
