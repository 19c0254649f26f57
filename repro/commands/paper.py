"""`repro paper render RESULTS... [--out paper/tables]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.reader import BundleReader
from repro.bundle.signers import require_signed
from repro.commands.vocabulary import Typer
from repro.core.terminal import shown
from repro.report.aggregate import collect_with_cells
from repro.report.figures import render_figures, write_figures
from repro.report.html import render_report
from repro.report.paper import render as render_tables
from repro.report.runtimes import runtime_summaries

app = Typer(help="Paper tables from clean-room results.", no_args_is_help=True)


@app.command()
def render(
    results: list[Path] = typer.Argument(..., help="Run folders or results folders."),
    out: Path = typer.Option(Path("paper/tables"), "--out", help="Where results.md and results.tex go."),
    require_signature: Path = typer.Option(
        None,
        "--require-signature",
        help="An ssh allowed_signers file: render only when every run is signed by one of them (exit 1 otherwise).",
    ),
) -> None:
    """Render LaTeX (booktabs) and Markdown tables, figures and report.html from VALID cells; the
    rest are listed as excluded.

    Exit codes: 0 rendered; 1 a run is not signed as --require-signature asks; 2 bad input."""
    signers: dict[str, str] = {}
    if require_signature is not None:
        for run_dir, signer in require_signed(results, require_signature):
            Console().print(f"signed: {shown(run_dir.name)} by {shown(signer)}", soft_wrap=True)
            signers[str(run_dir)] = signer
    tables, cells = collect_with_cells(results, signers=signers)
    rendered = render_figures(tables)  # drawn once, for the files and for report.html
    figures = write_figures(tables, out, rendered)
    names = list(dict.fromkeys(path.stem for path in figures))
    valid = {cell.record.cell.id for group in cells.values() for cell in group}  # a report shows VALID cells
    runtimes = [s for path in results for run in find_runs(path) for s in runtime_summaries(BundleReader(run), valid)]
    written = figures + render_tables(tables, out, names) + [render_report(tables, out, cells, rendered, runtimes)]
    console = Console()
    console.print(f"{len(tables.rows)} table rows from VALID cells, {len(tables.exclusions)} exclusions")
    for path in written:
        console.print(f"wrote {shown(path)}", soft_wrap=True)
