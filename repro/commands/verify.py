"""`repro verify RESULTS... --published FILE|BUNDLE [--identical-transcripts]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.bundle.signing import require_signed
from repro.core.errors import BadInput
from repro.core.terminal import printable, shown
from repro.report.aggregate import collect_with_cells
from repro.report.verify import RowComparison, compare, load_side

COLOURS = {"reproduced": "green", "differs": "red", "missing": "red", "extra": "yellow"}


def verify(
    results: list[Path] = typer.Argument(..., help="The rerun: run folders or results folders."),
    published: Path = typer.Option(
        ..., "--published", help="results.json of the published numbers (written by repro paper render), or the published bundle itself."
    ),
    identical_transcripts: bool = typer.Option(False, "--identical-transcripts", help="A differing transcript makes its row differ (for CPU, temperature 0)."),
    require_signature: Path = typer.Option(
        None, "--require-signature", help="An ssh allowed_signers file: the published bundle must be signed by one of them (exit 1 otherwise)."
    ),
) -> None:
    """Compare a rerun with published numbers, row by row and scenario by scenario; exit 1 on any difference."""
    if require_signature is not None:
        if not published.is_dir():
            raise BadInput(f"{published}: --require-signature needs the published bundle (a results.json carries no signature)")
        for run_dir, signer in require_signed([published], require_signature):
            Console().print(f"published bundle signed: {shown(run_dir.name)} by {shown(signer)}", soft_wrap=True)
    published_tables, published_cells = load_side(published)
    rerun_tables, rerun_cells = collect_with_cells(results)
    comparisons = compare(published_tables, rerun_tables, published_cells, rerun_cells, require_identical=identical_transcripts)
    console = Console()
    for item in comparisons:
        print_row(console, item)
    reproduced = sum(item.status == "reproduced" for item in comparisons)
    console.print(f"{reproduced} of {len(comparisons)} rows reproduced")
    if reproduced != len(comparisons):
        raise typer.Exit(1)


def print_row(console: Console, item: RowComparison) -> None:
    scores = f"published {item.published or '-'}, rerun {item.rerun or '-'}"
    identity = f"; {item.transcripts.summary()}" if item.transcripts else ""
    console.print(f"[{COLOURS[item.status]}]{item.status.upper():<10}[/] {shown(item.key)} ({shown(scores + identity)})", soft_wrap=True, highlight=False)
    listed = item.differences if item.status != "reproduced" else []
    for line in listed + [d for d in (item.transcripts.differing if item.transcripts else []) if d not in listed]:
        console.print(f"           - {printable(line)}", soft_wrap=True, highlight=False, markup=False)
