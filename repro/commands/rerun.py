"""`repro rerun BUNDLE`: check a bundle, rerun its cells here, verify the rerun against it.

The steps are repro.rerun.session's `RerunSession`: this module parses the flags, hands the
session what it borrows (`Borrowed`: the fetch and build of `models fetch`, `suites fetch` and
`images build`) and what prints each step (`Printed`), and exits with the verdict's code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from repro.bundle.setup import parse_accept
from repro.commands.printing import print_claims, print_verdicts
from repro.commands.steps import build_images, fetch_models, fetch_suites
from repro.commands.vocabulary import PROFILE_HELP
from repro.core.git import repository_top
from repro.core.terminal import shown
from repro.rerun.preflight import SetupRow
from repro.rerun.prepare import RerunOptions, RerunPlan
from repro.rerun.session import RerunSession
from repro.rerun.verdict import RerunVerdict

if TYPE_CHECKING:
    from repro.check.verdict import RunVerdict
    from repro.run.progress import RunProgress

console = Console(highlight=False)  # ids, paths and reasons came from the bundle: printed escaped (shown)


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
    session = RerunSession(
        options,
        Printed(names),
        Borrowed(),
        accepted=names,
        resume=resume,
        author_repo=repository_top(source) if source is not None else None,
    )
    raise typer.Exit(session.run().exit_code)


class Printed:
    """Each step of the session as `repro rerun` prints it (repro.rerun.session.RerunReport)."""

    def __init__(self, accepted: frozenset[str]) -> None:
        self.accepted = accepted

    def prepared(self, plan: RerunPlan) -> None:
        print_preflight(plan, self.accepted)

    def run_progress(self) -> RunProgress:
        from repro.run.progress import RunProgress

        return RunProgress(console)

    def ran(self, run_dir: Path) -> None:
        from repro.run.progress import print_run_summary

        print_run_summary(run_dir, console)

    def checked(self, verdict: RunVerdict) -> None:
        print_verdicts([verdict])

    def verified(self, verdict: RerunVerdict, report: Path) -> None:
        print_claims(verdict.report, side=None)  # the closing line below says what it found
        console.print(f"report: {shown(report)}", soft_wrap=True)
        console.print(shown(verdict.closing_line()), soft_wrap=True)


class Borrowed:
    """Fetch and build as `repro models fetch`, `repro suites fetch` and `repro images build` do
    them, printing as they go (repro.commands.steps; repro.rerun.session.FetchAndBuild)."""

    def fetch_models(self, matrix: Path, model_ids: list[str]) -> None:
        fetch_models(matrix, model_ids)

    def fetch_suites(self, matrix: Path) -> None:
        fetch_suites(matrix, console)

    def build_images(self, matrix: Path, profile: str) -> None:
        build_images(matrix, profile, None)


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
