"""Fetch and build as the commands do them, printing as they go: `repro models fetch`, `repro suites
fetch` and `repro images build`, and `repro rerun`, which borrows them (a module of the commands
that defines no command, as `vocabulary`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from repro.core.errors import BadInput, ReproError
from repro.core.terminal import shown
from repro.runtimes.image import build_runtime_images
from repro.spec.cells import driven_runtimes
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.matrix import LoadedMatrix, ModelSpec
from repro.store import models
from repro.store.images import (
    Blocked,
    BuildLog,
    BuildPlan,
    DigestPin,
    build_image,
    build_log_path,
    harness_image,
    needed_images,
    resolve_digest,
    resolve_plan,
)
from repro.suites.registry import kind_of

if TYPE_CHECKING:
    from repro.containers.client import DockerClient
    from repro.spec.matrix import Variant

console = Console(highlight=False)  # ids, sources and log lines are input: printed escaped (shown)
errors = Console(stderr=True, highlight=False)


def docker_client() -> DockerClient:
    from repro.containers.client import get_client

    return get_client()


# ---------------------------------------------------------------- models


class RichProgress(models.Progress):
    """One progress bar per model while its bytes stream through the hash."""

    def __init__(self, bars: Progress) -> None:
        self.bars = bars
        self.tasks: dict[str, TaskID] = {}

    def status(self, model_id: str, text: str) -> None:
        self.bars.console.print(f"[dim]{shown(model_id)}: {shown(text)}[/]", soft_wrap=True)

    def start(self, model_id: str, source: str, total: int | None) -> None:
        self.tasks[model_id] = self.bars.add_task(f"{shown(model_id)} [dim]{shown(source[:60])}[/]", total=total)

    def advance(self, model_id: str, count: int) -> None:
        if model_id in self.tasks:
            self.bars.advance(self.tasks[model_id], count)

    def finish(self, model_id: str) -> None:
        if model_id in self.tasks:
            self.bars.remove_task(self.tasks.pop(model_id))


def fetch_models(matrix: Path, wanted: list[str] | None) -> None:
    """Fetch and verify a matrix's models (or those `wanted`) into the store, a progress bar each and a
    line each; ModelError naming every one that failed."""
    specs = select_models(matrix, wanted)
    loaded = load_matrix(matrix)
    # paths_from: matrix: a model's path is in the matrix's folder
    base_dir = loaded.root if loaded.outside else Path.cwd()
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=errors,
        transient=True,
    )
    problems: list[str] = []
    with bars:
        reporter = RichProgress(bars)
        for spec in specs:
            try:
                stored = models.fetch(spec, base_dir=base_dir, progress=reporter)
            except models.ModelError as error:
                problems += error.lines
                for line in error.lines:
                    bars.console.print(f"[red]FAIL[/] {shown(line)}", soft_wrap=True)
                continue
            verb = f"fetched from {stored.source}" if stored.downloaded else "already in the store"
            reads_model = any(not e.facts.in_harness_image for e in loaded.matrix.engines)
            template = template_line(spec, stored.path, read=reads_model)
            if template.startswith("FAIL "):
                problems.append(template[5:])
                bars.console.print(f"[red]FAIL[/] {shown(template[5:])}", soft_wrap=True)
                continue
            bars.console.print(
                f"[green]OK[/]   {shown(spec.id)}: sha256 {spec.sha256[:12]} {stored.size} bytes, "
                f"{shown(verb)}; {shown(template)}",
                soft_wrap=True,
            )
            for skipped in stored.skipped_sources:
                bars.console.print(f"       [yellow]skipped[/] {shown(skipped)}", soft_wrap=True)
    if problems:
        raise models.ModelError(problems[0], lines=problems)
    console.print(f"{len(specs)} models verified in {shown(models.store_dir())}", soft_wrap=True)


def template_line(spec: ModelSpec, gguf: Path, *, read: bool = True) -> str:
    """What the model's chat template carries, in a few words; "FAIL <reason>" when it has none.
    Not read (`read` false) where only scripted engines serve it: their model file is a scenario
    archive, no GGUF."""
    if not read:
        return "no chat template (only scripted engines serve it: a scenario archive)"
    from repro.store.chat_template import template_facts

    try:
        facts = template_facts(spec, gguf)
    except BadInput as error:
        return f"FAIL {error}"
    carries = [name for name, ok in (("tools", facts.renders_tools), ("tool calls", facts.renders_tool_calls)) if ok]
    turn = (
        f"end of turn {facts.end_of_turn} ({'EOG' if facts.end_of_turn_is_eog else 'NOT an end-of-generation token'})"
    )
    return (
        f"chat template from {facts.source} sha256 {facts.sha256[:12]}, "
        f"renders {', '.join(carries) or 'no tools'}, {turn}"
    )


def select_models(matrix: Path, wanted: list[str] | None) -> list:
    loaded = load_matrix(matrix)
    specs = models.unique_models(loaded.matrix.models)
    if wanted:
        unknown = sorted(set(wanted) - {s.id for s in specs})
        if unknown:
            raise BadInput(
                f"unknown model id(s): {', '.join(unknown)} (the matrix has: {', '.join(s.id for s in specs)})"
            )
        specs = [s for s in specs if s.id in wanted]
    return specs


# ---------------------------------------------------------------- suites


def fetch_suites(matrix: Path, console: Console) -> None:
    """Fetch, verify and unpack each suite of a matrix that has a source or an external harness, a line each."""
    loaded = load_matrix(matrix)
    ready = 0
    for suite in loaded.matrix.suites:
        said = kind_of(suite).fetch(suite, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True))
        if said is not None:
            console.print(f"[green]OK[/]   {shown(suite.id)}: {shown(said)}", soft_wrap=True)
            ready += 1
    console.print(f"{ready} external suite(s) ready; {len(loaded.matrix.suites) - ready} in the project")


# ---------------------------------------------------------------- images


def images_needed(
    matrix: Path, profile: str, *, collect: bool = False
) -> tuple[DockerClient, Variant, list[BuildPlan | DigestPin | Blocked]]:
    """The Docker client and the images a matrix needs; the matrix and profile are checked before Docker is asked."""
    loaded, profiles = load_matrix_and_profiles(matrix)  # the project's profiles and the matrix's own profiles_file
    chosen = profiles.get(profile)
    client = docker_client()
    # the same key as `repro matrix run` asks for: CUDA engines built for the profile's capability only
    return (
        client,
        chosen.engine_variant,
        needed_images(
            loaded, chosen.engine_variant, client, collect=collect, compute_capability=chosen.compute_capability
        ),
    )


def build_images(matrix: Path, profile: str, stream: Callable[[str], None] | None) -> None:
    """Build the harness image, the engine images and the suite images a matrix needs on a profile
    (what is up to date is said and skipped), one line each; ReproError naming every problem."""
    client, variant, needs = images_needed(matrix, profile)
    problems: list[str] = []
    for need in needs:
        if isinstance(need, DigestPin):
            try:
                ref = resolve_digest(need, client)
                console.print(f"[green]present[/]  {need.name}: {need.reference} ({ref.id[7:19]}), pinned by digest")
            except ReproError as error:
                problems.append(error.lines[0])
                console.print(f"[red]missing[/]  {need.name}: {escape(error.lines[0])}")
            continue
        assert not isinstance(need, Blocked)  # without collect, a plan that cannot be computed raised
        found = resolve_plan(need, client)
        if found is not None:
            console.print(f"[green]up to date[/] {need.tag} ({found.id[7:19]})")
            continue
        started = time.monotonic()
        with building(f"{need.tag} ({build_label(need)})", BuildLog(build_log_path(need.name), stream)) as log:
            ref = build_image(need, client, log=log)
        console.print(
            f"[green]built[/]    {need.tag} ({ref.id[7:19]}) in {time.monotonic() - started:.0f} s; log: "
            f"{escape(str(log.path))}"
        )
    if problems:
        raise ReproError(problems[0], lines=problems)
    loaded = load_matrix(matrix)
    build_suite_images(loaded, client, stream)
    build_runtime_images_of(loaded, client, stream)
    build_driven_images(loaded, client, stream)


@contextmanager
def building(what: str, log: BuildLog) -> Iterator[BuildLog]:
    """One build and its log: on a terminal a transient status line while it builds; without
    one (or with --log), a line saying what builds and where its log goes."""
    with log:
        if log.stream is not None or not console.is_terminal:
            console.print(f"[bold]building[/] {escape(what)}; log: {escape(str(log.path))}", soft_wrap=True)
            yield log
            return
        with console.status(f"building {escape(what)}; log: {escape(str(log.path))}"):
            yield log


def build_suite_images(loaded: LoadedMatrix, client: DockerClient, stream: Callable[[str], None] | None) -> None:
    """The image of each suite whose kind has its own (an external harness's wheels fetched and
    verified first); built only when missing, its log in `<cache>/build-logs/suite-<id>.log`."""
    harness = harness_image(client)
    for suite in loaded.matrix.suites:
        started = time.monotonic()
        with BuildLog(build_log_path(f"suite-{suite.id}"), stream) as log:
            ref = kind_of(suite).build_image(suite, harness, log)
        if ref is not None:
            where = f"; log: {escape(str(log.path))}" if log.written else ""
            console.print(
                f"[green]ready[/]      {ref.reference} ({ref.id[7:19]}) for suite {escape(suite.id)} in "
                f"{time.monotonic() - started:.0f} s{where}"
            )


def build_runtime_images_of(loaded: LoadedMatrix, client: DockerClient, stream: Callable[[str], None] | None) -> None:
    """The image of each agent runtime the matrix names (the harness image and the runtime, its
    packages fetched and verified on the host first); built only when missing, its log in
    `<cache>/build-logs/runtime-<id>.log`."""
    for runtime in loaded.matrix.runtimes:
        if runtime.raw:
            continue
        started = time.monotonic()
        with BuildLog(build_log_path(f"runtime-{runtime.id}"), stream) as log:
            [ref] = build_runtime_images([runtime], client, log)
        where = f"; log: {escape(str(log.path))}" if log.written else ""
        console.print(
            f"[green]ready[/]      {ref.reference} ({ref.id[7:19]}) for runtime {escape(runtime.id)} "
            f"({escape(runtime.pin)}) in {time.monotonic() - started:.0f} s{where}"
        )


def build_driven_images(loaded: LoadedMatrix, client: DockerClient, stream: Callable[[str], None] | None) -> None:
    """The image of each external suite whose harness drives one of the matrix's runtimes with its
    own code (LAB's CLI runtimes): the suite's image built on the runtime's; its log in
    `<cache>/build-logs/suite-<id>-<runtime>.log`."""
    driven = [(s, r) for s in loaded.matrix.suites for r in driven_runtimes(s, loaded.matrix.runtimes)]
    for suite, runtime in driven:
        started = time.monotonic()
        with BuildLog(build_log_path(f"suite-{suite.id}-{runtime.id}"), stream) as log:
            [base] = build_runtime_images([runtime], client, log)
            ref = kind_of(suite).build_image(suite, base, log)
        if ref is not None:
            console.print(
                f"[green]ready[/]      {ref.reference} ({ref.id[7:19]}) for suite {escape(suite.id)} via runtime "
                f"{escape(runtime.id)} in {time.monotonic() - started:.0f} s"
            )


def build_label(plan: BuildPlan) -> str:
    if plan.kind == "harness":
        return f"harness tree {plan.inputs['harness_tree'][:12]}"
    build_info = plan.labels.get("repro.build_info")
    stamp = f"build_info {build_info}" if build_info else f"version {plan.labels.get('repro.version', '?')}"
    return f"{plan.variant}, {plan.source}, {stamp}"
