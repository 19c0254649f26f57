"""`repro check [RESULTS]`: VALID / EXCLUDED / INVALID / UNCHECKED per cell, with every reason."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from repro.bundle.layout.discovery import find_runs, latest_run
from repro.bundle.layout.merge import merge_problems
from repro.bundle.signers import require_signed
from repro.check.verdict import RunVerdict, check_run, exit_status
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.report.coverage import run_coverage

COLOURS = {"VALID": "green", "EXCLUDED": "yellow", "INVALID": "red", "UNCHECKED": "magenta"}


def check(
    results: Path = typer.Argument(
        None, help="A run folder, or a results folder of runs (default: the latest run in results/)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
    allowed_signers: Path = typer.Option(
        None,
        "--allowed-signers",
        help="An ssh allowed_signers file: each run must carry a valid signature by one of them.",
    ),
    source: Path = typer.Option(
        None,
        "--source",
        help="The author's git repository of a matrix kept outside the project: its matrix, "
        "profiles and scenarios are compared with it at the run's commit.",
    ),
) -> None:
    """Decide from the bundle alone which cells are clean-room: VALID, EXCLUDED, INVALID or UNCHECKED
    per cell, with every reason. UNCHECKED: nothing found wrong, but a check could not look (an
    external harness's code neither the cache nor the bundle holds); its reason names the command
    that makes it checkable.

    Exit codes: 0 every cell VALID or EXCLUDED; 1 a cell is INVALID, a merged folder is not the whole
    split its MERGED.json records, or (with --allowed-signers) a run is not signed by an allowed
    signer; 2 bad input; 3 a cell is UNCHECKED and none is INVALID."""
    target = results if results is not None else latest_run(Path("results"))
    runs = find_runs(target)
    merge = merge_problems(target) if target.is_dir() else []
    signers = dict(require_signed([target], allowed_signers)) if allowed_signers else {}
    author_repo = git_repository(source) if source is not None else None
    verdicts = [
        check_run(run_dir, author_repo=author_repo).model_copy(update={"signer": signers.get(run_dir)})
        for run_dir in runs
    ]
    if as_json:  # stdout is the JSON alone; the signer is each run's `signer`
        typer.echo(json.dumps([v.model_dump(mode="json") for v in verdicts], indent=2))
    else:
        print_verdicts(verdicts)
    for problem in merge:
        Console(stderr=True).print(f"[red]merge[/]: {shown(problem)}", soft_wrap=True)
    code = exit_status(verdicts, failed=bool(merge))
    if code:
        raise typer.Exit(code)


def git_repository(folder: Path) -> Path:
    """--source: a folder inside a git repository (its top), else one line and exit 2."""
    from repro.core.git import git

    top = git(folder, "rev-parse", "--show-toplevel") if folder.is_dir() else None
    if top is None:
        raise BadInput(
            f"--source {shown(folder)}: not a folder in a git repository "
            "(give the author's repository the matrix was committed to)"
        )
    return Path(top.decode().strip())


def print_verdicts(verdicts: list[RunVerdict]) -> None:
    console = Console()
    for run in verdicts:
        if run.signer:
            console.print(f"signed: {shown(Path(run.run_dir).name)} by {shown(run.signer)}", soft_wrap=True)
        console.print(f"[bold]run {shown(run.run_id)}[/] (bundle format {shown(run.format_version)})", soft_wrap=True)
        for problem in run.run_problems if not run.cells else []:
            console.print(f"  [red]INVALID [/] {problem.rule}: {shown(problem.text)}", soft_wrap=True)
        for cell in run.cells:
            colour = COLOURS[cell.verdict]
            console.print(f"  [{colour}]{cell.verdict:<8}[/] {shown(cell.cell_id)}", soft_wrap=True)
            for index, reason in enumerate(cell.reasons if cell.verdict != "VALID" else []):
                kind = f"{cell.kind_label}: " if cell.kind_label and index == 0 else ""
                console.print(f"             - {kind}{shown(reason)}", soft_wrap=True)
            for note in cell.notes:
                console.print(f"             [dim]note[/]: {shown(note)}", soft_wrap=True)
        for note in run.notes:
            console.print(f"  [dim]note[/]: {shown(note)}", soft_wrap=True)
        for absent in run.absent:
            console.print(f"  [dim]ABSENT  [/] {shown(absent.cell_id)} - {shown(absent.reason)}", soft_wrap=True)
        partial = partial_label(run)
        console.print(
            "  " + ", ".join(f"{n} {name}" for name, n in run.counts.items()) + (f"; {partial}" if partial else ""),
            soft_wrap=True,
        )


def partial_label(run: RunVerdict) -> str | None:
    """What a run whose selection left planned cells out holds, as every table says it
    (repro.report.coverage): "partial: N of M planned cells (--only, K cells)" or "(shard i of n)";
    None for a whole run."""
    return run_coverage([run]).label or None
