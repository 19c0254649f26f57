"""`repro check [RESULTS]`: VALID / EXCLUDED / INVALID / UNCHECKED per cell, with every reason."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from repro.bundle.layout.discovery import find_runs, latest_run
from repro.bundle.layout.merge import merge_problems
from repro.bundle.signers import require_signed
from repro.check.verdict import check_run, exit_status
from repro.commands.printing import print_verdicts
from repro.core.git import repository_top
from repro.core.terminal import shown


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
    author_repo = repository_top(source) if source is not None else None
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
