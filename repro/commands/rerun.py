"""`repro rerun BUNDLE`: check a bundle, rerun its cells here, verify the rerun against it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.bundle.setup import parse_accept
from repro.commands import images as images_commands
from repro.commands import models as models_commands
from repro.commands import suites as suites_commands
from repro.commands.check import git_repository, print_verdicts
from repro.commands.matrix import first_disk_full, print_run_summary
from repro.commands.vocabulary import PROFILE_HELP
from repro.core.files import atomic_write
from repro.core.terminal import shown
from repro.rerun.preflight import SetupRow
from repro.rerun.session import RerunOptions, RerunPlan, prepare_rerun
from repro.rerun.verdict import RerunVerdict

console = Console(highlight=False)  # ids, paths and reasons came from the bundle: printed escaped (shown)
REPORT = "rerun-report"  # OUT/rerun-report.md and .json, beside the rerun's bundle


def rerun(
    bundle: Path = typer.Argument(
        ..., help="A bundle: a run folder, or its .tar.gz (e.g. paper/published/smoke-cpu-bundle.tar.gz)."
    ),
    profile: str = typer.Option(None, "--profile", "-p", help=PROFILE_HELP),  # None: the bundle's own profile
    only: list[str] = typer.Option([], "--only", help="Rerun only these cells of the bundle (repeatable)."),
    out: Path = typer.Option(
        None,
        "--out",
        help="Where the unpacked bundle, the rerun and its report go (default: results/reruns/<bundle>/).",
    ),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted rerun in OUT (as matrix run --resume)."),
    accept: list[str] = typer.Option(
        [],
        "--accept",
        help="Setup differences to accept by name, comma-separated (threads, hardware, harness, ...: as repro verify).",
    ),
    allowed_signers: Path = typer.Option(
        None, "--allowed-signers", help="An ssh allowed_signers file: the bundle must be signed by one of them."
    ),
    source: Path = typer.Option(
        None,
        "--source",
        help="The author's repository of a matrix kept outside the project: the bundle is checked against it.",
    ),
) -> None:
    """Rerun a bundle in one command: check it (an INVALID bundle is refused), rebuild its matrix,
    profile and suites from what it embeds, say input by input whether this rerun is the same
    setup, fetch and verify its models, build its images, rerun its cells, check the rerun and
    verify it against the bundle row by row and scenario by scenario; the verdict table goes to
    OUT/rerun-report.md and .json.

    Exit codes: 0 every row REPRODUCED or CONSISTENT on the bundle's setup (or on differences
    accepted by name); 1 any other verdict (DIFFERENT, NOT RERUN, ... ON ANOTHER SETUP); 2 bad input
    (not a bundle, a hostile or broken archive, an INVALID bundle, a model with no source here, a
    profile this machine cannot serve); 130 interrupted (--resume continues)."""
    names = parse_accept(accept)
    options = RerunOptions(
        bundle=bundle, out=out, profile=profile, only=only, allowed_signers=allowed_signers, source=source
    )
    prepared = prepare_rerun(options, git_repository(source) if source is not None else None)
    print_preflight(prepared, names)
    fetch_and_build(prepared)
    run_dir = run_cells(prepared, resume)
    verdict = finish(prepared, run_dir, names)
    raise typer.Exit(verdict.exit_code)


def print_preflight(prepared: RerunPlan, accepted: frozenset[str]) -> None:
    """The bundle, its cells, and the same-setup table, before anything is fetched or booted."""
    say = console.print
    say(
        f"[bold]rerun of {shown(prepared.record.run_id)}[/] (bundle checked: "
        f"{len(prepared.check.cells)} cells, none INVALID)",
        soft_wrap=True,
    )
    for cell in prepared.cells:
        say(f"  [green]RUN [/] {shown(cell.id)}", soft_wrap=True)
    for cell_id, reason in prepared.again_excluded.items():
        say(
            f"  [yellow]EXCL[/] {shown(cell_id)}: excluded again on profile {shown(prepared.profile)}: {shown(reason)}",
            soft_wrap=True,
        )
    say("[bold]same setup?[/] (input: bundle | here)")
    for row in prepared.setup:
        say(
            f"  {setup_state(row, accepted)} {shown(row.input)}: {shown(row.bundle)} | {shown(row.here)}",
            soft_wrap=True,
        )
    named = [row.input for row in prepared.setup if row.differs]
    if named:
        say(
            f"[yellow]not the same setup[/]: {shown('; '.join(named))}; "
            "the verdict names these and is never plain REPRODUCED",
            soft_wrap=True,
        )


def setup_state(row: SetupRow, accepted: frozenset[str]) -> str:
    if row.same is None:
        return "[dim]?       [/]"
    if row.same:
        return "[green]same    [/]"
    if not row.counts:
        return "[yellow]named   [/]"
    return "[cyan]accepted[/]" if row.name in accepted else "[red]DIFFERS [/]"


def fetch_and_build(prepared: RerunPlan) -> None:
    """What `models fetch`, `suites fetch` and `images build` do, on the rebuilt matrix."""
    models_commands.fetch(prepared.matrix, sorted({c.model.id for c in prepared.cells}))
    suites_commands.fetch(prepared.matrix, [], None)
    images_commands.build_command(prepared.matrix, prepared.profile, False)


def run_cells(prepared: RerunPlan, resume: bool) -> Path:
    """`matrix run` of exactly the bundle's cells, with its progress display, then `check`."""
    from repro.bundle.layout.writer import DiskFull
    from repro.check.verdict import check_run
    from repro.run.context import RunOptions
    from repro.run.progress import RunProgress
    from repro.run.runner import run_matrix

    options = RunOptions(
        matrix=prepared.matrix,
        profile=prepared.profile,
        out=prepared.out,
        resume=resume,
        only=[c.id for c in prepared.cells],
        prompt_cache=prepared.prompt_cache,
    )
    try:
        run_dir = run_matrix(options, RunProgress(console))
    except DiskFull as error:
        raise first_disk_full(error) from None
    print_run_summary(run_dir)
    print_verdicts([check_run(run_dir)])
    return run_dir


def finish(prepared: RerunPlan, run_dir: Path, accepted: frozenset[str]) -> RerunVerdict:
    """The verdict against the bundle, printed as `repro verify` prints it and written beside the rerun."""
    from repro.commands.verify import print_claims
    from repro.rerun.verdict import verdict_of

    verdict = verdict_of(prepared.run_dir, [run_dir], accepted)
    print_claims(verdict.report, side=None)  # the closing line below says what it found
    atomic_write(prepared.out / f"{REPORT}.md", verdict.markdown().encode())
    atomic_write(prepared.out / f"{REPORT}.json", verdict.model_dump_json(indent=2).encode())
    console.print(f"report: {shown(prepared.out / (REPORT + '.md'))}", soft_wrap=True)
    console.print(shown(verdict.closing_line()), soft_wrap=True)
    return verdict
