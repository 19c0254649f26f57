"""`repro matrix run`: plan, then for each (engine, model) group boot, gate, run cells, record, stop.

Read top to bottom: `run_matrix` prepares everything that can be checked before an engine boots,
opens (or resumes) the bundle, then runs one group at a time. A group boots its engine once,
gates it, and runs each cell's harness in its own sealed container joined to the engine's
network namespace; results are read from the harness's output files (as untrusted input), never
from stdout. A dirty project tree is refused before anything starts (unless --allow-dirty, which
marks the run not clean-room from the start). Every container is removed on the way out; an
interrupted run leaves no container and no half cell: the cell in progress keeps its finished
scenarios in its partial folder (repro.bundle.layout), and `--resume` reruns only the rest.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.contracts import SandboxAudit
from repro.bundle.layout import AUTHOR_PROFILES_COPY, ENGINE_LOG, Bundle, BundleReader, CellWriter, find_resumable, mark_latest
from repro.bundle.provenance import author_at_end, author_source, dirty_lines, source_at_end, source_state, system_description
from repro.bundle.records import (
    CellRecord,
    EarlierAttempt,
    EngineIncident,
    EngineSettings,
    Execution,
    IdentityCheck,
    ImageInfo,
    KeptScenario,
    MatrixInfo,
    PartialCell,
    RunRecord,
    SandboxRecord,
    SourceState,
    utc_now,
)
from repro.bundle.redact import Redactor
from repro.containers import lifecycle as containers
from repro.containers.audit import audit_command, run_audit
from repro.containers.cleanup import cleanup as cleanup_run
from repro.containers.cleanup import leaked_containers
from repro.containers.client import DockerClient, daemon_unanswering, get_client, wait_for_daemon
from repro.containers.sandbox import container_name, harness_kwargs, read_back, writable_by_sandbox
from repro.core.errors import BadInput
from repro.core.files import scratch_dir, short_error
from repro.core.terminal import shown
from repro.core.yamlsource import MAX_YAML_BYTES, read_bounded
from repro.engines.base import Engine, EngineDied, EngineHandle, EngineRefused, host_cpus_of, joined_logs, stop_engine
from repro.engines.gate import CAUSE_TEXT, gate_cause, gate_with_retries, run_gate
from repro.engines.registry import boot_engine, engine_for
from repro.plan.planner import Plan, select_cells, shard_cells, stored_plan
from repro.plan.replicas import deal, replica_allowance, replica_count
from repro.run.healing import MAX_CELL_RERUNS, EngineLost, blame_engine, describe, engine_container, engine_watch, heal, require_answering, unhealed_reason
from repro.run.progress import RunProgress
from repro.spec.cells import Cell
from repro.spec.findings import GateResult, SandboxSettings, SuiteSelection, TemplateFacts
from repro.spec.matrix import LoadedMatrix, load_matrix, load_matrix_and_profiles
from repro.spec.profiles import Profile
from repro.store.chat_template import engine_template_problem, server_blocker
from repro.store.images import ImageRef, engine_image, harness_image
from repro.store.models import model_path
from repro.suites.base import SCENARIO_MOUNT, SuiteKind
from repro.suites.registry import kind_of

EXIT_OK = 0
EXIT_FAULT = 1  # a cell ended in an engine fault (or another error), or the latency gate excluded it
EXIT_INTERRUPTED = 130


class RunOptions(BaseModel):
    matrix: Path
    profile: str
    out: Path = Path("results")
    resume: bool = False
    only: list[str] = []
    shard: tuple[int, int] | None = None  # (i, n): this machine runs the i-th of n shards, 1-based
    replicas: int | None = 1  # engines per group, one slot each; None: as many as the cores (and GPU memory) hold
    allow_dirty: bool = False  # run on a dirty tree anyway, marked not clean-room from the start

    @property
    def shard_text(self) -> str | None:
        return f"{self.shard[0]}/{self.shard[1]}" if self.shard else None


class Prepared(BaseModel):
    """Everything checked before any engine boots: plan, images, models, suites."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    loaded: LoadedMatrix
    plan: Plan
    profile: Profile
    cells: list[Cell]
    harness: ImageRef
    engines: dict[str, ImageRef]
    models: dict[str, Path]
    suites: dict[str, SuiteSelection]
    templates: dict[str, TemplateFacts] = {}  # model id -> its chat template's facts (the preflight)
    suite_images: dict[str, ImageRef] = {}  # suite id -> the image its kind runs it in (the harness unless the kind has its own)

    def harness_for(self, cell: Cell) -> ImageRef:
        """The image of a cell's harness containers, as the suite's kind says."""
        return self.suite_images.get(cell.suite.id, self.harness)


class RunContext(BaseModel):
    """What every step of a run needs, passed as one object."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: DockerClient
    prepared: Prepared
    bundle: Bundle
    run_id: str
    progress: RunProgress
    replicas: int = 1  # engine replicas per group (repro.plan.replicas)

    @property
    def execution(self) -> Execution:
        return Execution.of(self.prepared.profile, self.replicas)


class GroupEngine(BaseModel):
    """The booted, gated engine of one (engine, model) group, and its replicas if the run has more
    than one: same image, model and threads, booted and identity-checked alike; `handle` (the
    first) is the gated one and the one the records name."""

    handle: EngineHandle
    gate: GateResult
    others: list[EngineHandle] = []

    @property
    def handles(self) -> list[EngineHandle]:
        return [self.handle, *self.others]


def run_matrix(options: RunOptions, progress: RunProgress) -> Path:
    """Run a matrix; return the run folder. Raises BadInput for bad input before anything starts."""
    source = source_state()
    dirty = dirty_lines(source, author_source(load_matrix(options.matrix)))  # before models, images or Docker are asked for
    refuse_dirty(dirty, options.allow_dirty)
    prepared = prepare(options)
    client = get_client()
    replicas = choose_replicas(options, prepared, client)
    run_dir, record, resumed = open_run(options, prepared, source, client)
    ctx = RunContext(client=client, prepared=prepared, bundle=Bundle(run_dir, Redactor()), run_id=record.run_id, progress=progress, replicas=replicas)
    if resumed:
        progress.note(f"resuming {record.run_id}: complete, intact cells are kept")
    elif options.resume:
        progress.note("nothing to resume for this matrix, profile and project commit: starting a new run")
    progress.start_run(record.run_id, run_dir, prepared.cells, {c.id: len(prepared.suites[c.suite.id].ids) for c in prepared.cells})
    if dirty:
        progress.note(f"[yellow]not a clean-room run[/] (--allow-dirty): {shown('; '.join(dirty))}; repro check will call every cell INVALID")
    progress.note(f"engines: {ctx.execution.label()}; {replicas} replica(s) per group, {ctx.execution.workers} harness worker(s) per cell")
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


def refuse_dirty(dirty: list[str], allow_dirty: bool) -> None:
    """Before anything starts: uncommitted or untracked, unignored files (the project's, or the
    author's) make every cell INVALID (repro check's provenance rule reads the same records), so
    such a run is refused."""
    if dirty and not allow_dirty:
        raise BadInput(f"{'; '.join(dirty)}: commit or remove them (or ignore them in .gitignore), or run anyway with --allow-dirty (not a clean-room run)")


def choose_replicas(options: RunOptions, prepared: Prepared, client: DockerClient) -> int:
    """Engine replicas per group: --replicas, or as many as the Docker host's cores (and the GPU
    memory, for the largest model) hold; BadInput when asked for more (repro.plan.replicas)."""
    largest = max(c.model.file_size for c in prepared.cells)
    allowance = max(gpu_allowance(prepared, c) for c in prepared.cells) if prepared.profile.gpu_count > 0 else None
    return replica_count(options.replicas, prepared.profile, host_cpus=host_cpus_of(client), model_bytes=largest, gpu_bytes=allowance)


def gpu_allowance(prepared: Prepared, cell: Cell) -> int:
    """The GPU memory one replica of the cell's model needs at the cell's context (its GGUF's
    shape read from the header; weights plus 1 GiB when the header cannot be read)."""
    from repro.store.gguf import read_header

    try:
        header = read_header(prepared.models[cell.model.id])
    except (BadInput, KeyError):
        return replica_allowance(cell.model.file_size, {}, 0, 0)
    return replica_allowance(cell.model.file_size, header.shape, cell.decoding.context * prepared.profile.slots, len(header.tokens))


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's cancel, `docker stop`, `kill`): stop as on Ctrl-C, so the run's
    containers are removed and its bundle is closed as interrupted, ready for --resume."""
    raise KeyboardInterrupt


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
    causes = Counter(cause for cause in (cell_cause(bundle, cell_id, record.profile_settings) for cell_id in record.planned_cells) if cause)
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


# ---------------------------------------------------------------- before anything boots


def prepare(options: RunOptions) -> Prepared:
    loaded, profiles = load_matrix_and_profiles(options.matrix)
    profile = profiles.get(options.profile)
    plan, templates = stored_plan(loaded, options.profile, profile, require_all=options.shard is not None)
    cells = shard_cells(select_cells(plan, options.only), options.shard)
    if not cells:
        raise BadInput(f"nothing to run: no cell of {options.matrix} on profile {options.profile} is selected")
    suites = {c.suite.id: kind_of(c.suite).select(c.suite, loaded.suite_root(c.suite)) for c in cells}
    refuse_unpinned_suites(cells, suites)
    refuse_unfit(cells, suites)
    harness = harness_image()
    return Prepared(
        loaded=loaded,
        plan=plan,
        profile=profile,
        cells=cells,
        harness=harness,
        suite_images={c.suite.id: kind_of(c.suite).image(c.suite, harness) for c in cells},
        engines={c.engine.id: engine_image(c.engine, profile.engine_variant, compute_capability=profile.compute_capability) for c in cells},
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


def refuse_unfit(cells: list[Cell], suites: dict[str, SuiteSelection]) -> None:
    """Before any engine boots: what each suite's kind refuses (for our scenarios: every selected
    scenario loads, its reference passes, and doing nothing does not pass it); BadInput naming each."""
    kinds = {c.suite.id: kind_of(c.suite) for c in cells}
    problems = [p for suite_id, selection in suites.items() for p in kinds[suite_id].refuse_unfit(selection)]
    if problems:
        message = f"{len(problems)} scenario(s) cannot score a model; fix or deselect them"
        raise BadInput(message, lines=[message, *problems[:20]])


def open_run(options: RunOptions, prepared: Prepared, source: SourceState, client: DockerClient) -> tuple[Path, RunRecord, bool]:
    """With --resume, the latest run of the same matrix, profile, shard and project source
    (its complete, intact cells are kept); otherwise, or when there is none, a new run folder."""
    if options.resume:
        previous = find_resumable(options.out, prepared.loaded.sha256, options.profile, options.shard_text, {c.id for c in prepared.cells}, source)
        if previous is not None:
            run_dir, record = previous
            return run_dir, record.model_copy(update={"status": "running", "finished_at": None}), True
    record = new_run_record(options, prepared, source, client)
    run_dir = options.out / record.run_id
    bundle = Bundle(run_dir, Redactor())
    bundle.embed_matrix(read_bounded(options.matrix, MAX_YAML_BYTES), prepared.loaded.sha256)
    if record.author is not None and record.author.profiles_file is not None:
        own = record.author.profiles_file
        bundle.embed_matrix(read_bounded(prepared.loaded.root / own.path, MAX_YAML_BYTES), own.sha256, name=AUTHOR_PROFILES_COPY)
    for suite_id, selection in prepared.suites.items():
        suite = next(c.suite for c in prepared.cells if c.suite.id == suite_id)
        kind_of(suite).embed(bundle, suite, selection)
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
    first_shard = options.shard is None or options.shard[0] == 1  # plan exclusions are listed once
    return RunRecord(
        run_id=f"{stamp}-{prepared.loaded.matrix.name}-{options.profile}{shard}",
        status="running",
        matrix=MatrixInfo(path=matrix_name(prepared.loaded, options.matrix), name=prepared.loaded.matrix.name, sha256=prepared.loaded.sha256),
        profile=options.profile,
        profile_settings=prepared.profile,
        source=source,
        author=author_source(prepared.loaded),
        dirty_allowed=bool(dirty_lines(source, author_source(prepared.loaded))),
        system=system_description(client),
        planned_cells=[c.id for c in prepared.cells],
        excluded_cells={c.id: c.excluded or "excluded" for c in prepared.plan.excluded} if first_shard else {},
        excluded_kinds={c.id: c.excluded_kind for c in prepared.plan.excluded if c.excluded_kind} if first_shard else {},
        shard=options.shard_text,
        only=list(options.only),
        chat_templates=prepared.templates,
        started_at=utc_now(),
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
        leaks = [f"unknown: the Docker daemon did not answer ({short_error(error)}); run: repro cleanup --run-id {record.run_id}"]
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


# ---------------------------------------------------------------- one engine, its cells


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
                why = str(error) if isinstance(error, EngineRefused | EngineDied) else f"the Docker daemon did not answer ({short_error(error)})"
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
        f"[red]engine {first[0]} with model {first[1]} could not be booted again[/]: cell {failed.id} ended as an engine fault"
        f"{f' and its {len(rest)} other cells are not run' if rest else ''}; going on with the next group (rerun them with --resume)"
    )
    for cell in rest:
        reason = f"engine fault: the group's engine died during cell {failed.id} and could not be healed; rerun with --resume"
        write_failed_cell(ctx, cell, "error", reason, handle=group.handle, gate=group.gate)


def boot_group_engine(ctx: RunContext, cell: Cell, replica: int = 0) -> EngineHandle:
    prepared = ctx.prepared
    return boot_engine(
        ctx.client,
        cell.engine,
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
        return run_gate(ctx.client, handle, profile=profile, settings=settings, decoding=cell.decoding, protocol=GATE_PROTOCOL, probe_image=prepared.harness.id)

    return gate_with_retries(measure, profile, note=ctx.progress.note)


def run_or_exclude(ctx: RunContext, cell: Cell, group: GroupEngine, booted: list[EngineHandle]) -> GroupEngine | None:
    """Run (or exclude) one cell; the group's engine afterwards, None when it could not be healed."""
    if not group.gate.passed:
        status = "error" if group.gate.engine_fault else "excluded"
        cause = f" ({CAUSE_TEXT[group.gate.cause]})" if group.gate.cause else ""
        write_failed_cell(ctx, cell, status, f"latency gate{cause}: {group.gate.reason}", handle=group.handle, gate=group.gate)
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
    if cell.engine.kind != "llama.cpp":
        return None
    wrong = engine_template_problem(ctx.prepared.templates.get(cell.model.id), handle.settings.get("chat_template_sha256"))
    if wrong:
        return "error", wrong
    blocker = server_blocker(handle.settings.get("chat_template_caps"), cell.protocol)
    return ("excluded", blocker) if blocker else None


def run_healing(ctx: RunContext, cell: Cell, group: GroupEngine, booted: list[EngineHandle]) -> tuple[CellRecord, GroupEngine | None]:
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
            healed, incident = heal(lost.fault, boot, stop, ctx.progress.note, daemon=lambda: wait_for_daemon(ctx.client))
            incidents.append(incident)
            if healed is None or len(incidents) > MAX_CELL_RERUNS:
                record = record_failed_cell(ctx, cell, "error", unhealed_reason(incidents), handle=group.handle, gate=group.gate, incidents=incidents)
                return record, healed
            ctx.progress.note(f"  engine healed: rerunning {cell.id} from its first scenario")
            group = healed


def write_failed_cell(ctx: RunContext, cell: Cell, status: str, reason: str, *, handle: EngineHandle | None, gate: GateResult | None = None) -> None:
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
    suite = prepared.suites[cell.suite.id]
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
            "engine_identity": IdentityCheck(expected=expected, reported=handle.identity, matched=handle.identity == expected),
            "engine_settings": EngineSettings(reported=handle.settings),
            "accelerator": handle.accelerator,
            "gpu": handle.gpu or None,
            "engine_boot_seconds": handle.boot_seconds,
            "engine_audit": handle.audit,
        }
    )


def image_info(image: ImageRef) -> ImageInfo:
    return ImageInfo(reference=image.reference, id=image.id, key=image.key, pinned_by=image.pinned_by, labels=dict(image.labels or {}))


# ---------------------------------------------------------------- one cell


def run_cell(ctx: RunContext, cell: Cell, group: GroupEngine, incidents: list[EngineIncident] | None = None) -> CellRecord:
    """Audit the sandbox, run the cell's harness workers while watching the engines, record the
    cell. EngineLost (nothing of the cell kept) when an engine died or stopped answering meanwhile."""
    suite, kind = ctx.prepared.suites[cell.suite.id], kind_of(cell.suite)
    partial = partial_of(ctx, cell, suite, group.handle)
    kept, attempts, logs = resumed_scenarios(ctx, cell, partial)
    kept_ids = [one.result.id for one in kept]
    update = {
        "engine_incidents": list(incidents or []),
        "execution": kind.execution(cell, ctx.execution),
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
            harness, ended = run_workers(ctx, cell, group, shares, out_dirs, watch, lambda: keep_finished(writer, kind, out_dirs, suite.ids))
            sandbox = SandboxRecord(harness=harness, engine=read_back(engines[0]))
            record = record.model_copy(update={"sandbox": sandbox, "harness_seconds": round(max(e.seconds for e in ended), 3)})
            writer.write_text("harness.log", joined_logs("worker", [e.log_tail for e in ended]) + "\n")
            writer.write_text(ENGINE_LOG, engine_logs(engines))
        record = kind.collect(writer, record, out_dirs, suite, ended, kept)
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
        execution=kind_of(cell.suite).execution(cell, ctx.execution),
        gpu=handle.gpu or None,
    )


def resumed_scenarios(ctx: RunContext, cell: Cell, partial: PartialCell) -> tuple[list[KeptScenario], list[EarlierAttempt], dict[str, str]]:
    """The finished scenarios interrupted attempts at this very cell, on the same engine and
    settings, kept (verified), the attempts they come from and their engine logs, said in one
    line with what is rerun; at least one scenario is always rerun, so this attempt records the
    cell's engine, sandbox and logs."""
    kept, why = ctx.bundle.kept_scenarios(cell.id, partial)
    found = ctx.bundle.earlier_attempts(cell.id, kept) if kept else ([], {})
    if isinstance(found, str):
        kept, why, found = [], found, ([], {})
    if why:
        ctx.progress.note(f"rerun {shown(cell.id)} from its first scenario: the interrupted attempt's scenarios are not kept ({shown(why)})")
    kept = kept[: len(partial.suite_ids) - 1]
    ids = {one.result.id for one in kept}
    attempts = [one.keeping(ids) for one in found[0] if ids & set(one.finished)]
    if kept:
        rest = [i for i in partial.suite_ids if i not in ids]
        ctx.progress.note(
            f"resume {shown(cell.id)}: {len(kept)} finished scenario(s) kept ({shown(scenario_span([one.result.id for one in kept]))}), "
            f"{len(rest)} rerun from {shown(rest[0])}"
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
    ctx.progress.note(f"interrupted {shown(cell.id)}: {len(writer.kept)} of {len(ids)} finished scenario(s) kept; {shown(where)}")


def scenario_span(ids: list[str]) -> str:
    """`a` or `a .. c` (the first and last of a run of scenario ids)."""
    return ids[0] if len(ids) == 1 else f"{ids[0]} .. {ids[-1]}"


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
    suite = ctx.prepared.suites[cell.suite.id]
    handles = group.handles
    with contextlib.ExitStack() as stack:
        started = []
        for index, (ids, out_dir) in enumerate(zip(shares, out_dirs, strict=True)):
            handle = handles[index % len(handles)]
            kind = kind_of(cell.suite)
            command = kind.command(cell, handle.client_argv(), suite, ctx.prepared.profile, ids)
            entrypoint = kind.entrypoint(cell)
            kwargs = cell_kwargs(ctx, cell, handle, suite, command, out_dir) | ({"entrypoint": entrypoint} if entrypoint else {})
            started.append(stack.enter_context(containers.started(ctx.client, kwargs)))
        ctx.progress.start_cell(cell, sum(len(ids) for ids in shares))
        deadline = harness_deadline(max(len(ids) for ids in shares), ctx.prepared.profile)
        ended = containers.wait_all(started, deadline, on_line=lambda line: feed_progress(ctx, cell, line, keep), watch=watch)
        return read_back(started[0]), ended


def watch_all(engines: list) -> containers.Watch:
    """A `containers.wait` watch over every replica: EngineLost as soon as one is not running."""
    watches = [engine_watch(engine) for engine in engines]

    def watch() -> None:
        for one in watches:
            one()

    return watch


def cell_kwargs(ctx: RunContext, cell: Cell, handle: EngineHandle, suite: SuiteSelection, command: list[str], out_dir: Path) -> dict:
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


def audit_cell(ctx: RunContext, cell: Cell, group: GroupEngine, suite: SuiteSelection, watch: containers.Watch) -> SandboxAudit:
    """The sandbox audit, run with the harness container's exact settings in the engine's namespace."""
    out_dir = harness_output_dir()
    try:
        return run_audit(ctx.client, cell_kwargs(ctx, cell, group.handle, suite, audit_command([SCENARIO_MOUNT]), out_dir), out_dir, watch)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def engine_suspect(record: CellRecord, ended: list[containers.Exit]) -> bool:
    """Did the harness end in a way a dead or silent engine explains (faults, no finish)?"""
    return any(e.timed_out or e.code != 0 for e in ended) or bool(record.summary and record.summary.engine_faults)


def health_check(ctx: RunContext, cell: Cell, handle: EngineHandle) -> Callable[[float], object]:
    """Ask one replica's health path from inside its namespace (for `require_answering`)."""
    return lambda timeout: engine_for_group(ctx, cell).wait_ready(handle, timeout)


def engine_for_group(ctx: RunContext, cell: Cell) -> Engine:
    return engine_for(ctx.client, cell.engine, probe_image=ctx.prepared.harness, run_id=ctx.run_id, group_id=f"{cell.engine.id}.{cell.model.id}")


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


def summary_line(record: CellRecord) -> str:
    if record.summary is None:
        return record.reason or record.status
    return f"{record.summary.passed}/{record.summary.total} passed"


__all__ = ["RunOptions", "RunOutcome", "run_matrix", "run_outcome", "run_exit_status", "prepare"]
