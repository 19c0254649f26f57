"""`repro paper render RESULTS... [--out paper/tables]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.aggregate import collect_with_cells
from repro.figures import write_figures
from repro.paper import render as render_tables
from repro.report import render_report

app = typer.Typer(help="Paper tables from clean-room results.", no_args_is_help=True)


@app.command()
def render(
    results: list[Path] = typer.Argument(..., help="Run folders or results folders."),
    out: Path = typer.Option(Path("paper/tables"), "--out", help="Where results.md and results.tex go."),
) -> None:
    """Render LaTeX (booktabs) and Markdown tables, figures and report.html from VALID cells; the rest are listed as excluded."""
    tables, cells = collect_with_cells(results)
    figures = write_figures(tables, out)
    names = list(dict.fromkeys(path.stem for path in figures))
    written = figures + render_tables(tables, out, names) + [render_report(tables, out, cells)]
    console = Console()
    console.print(f"{len(tables.rows)} table rows from VALID cells, {len(tables.exclusions)} exclusions")
    for path in written:
        console.print(f"wrote {path}")
