"""`repro verify RESULTS... --published FILE`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.aggregate import collect
from repro.verify import compare, load_published

COLOURS = {"reproduced": "green", "differs": "red", "missing": "red", "extra": "yellow"}


def verify(
    results: list[Path] = typer.Argument(..., help="The rerun: run folders or results folders."),
    published: Path = typer.Option(..., "--published", help="results.json of the published numbers (written by repro paper render)."),
) -> None:
    """Compare a rerun with published numbers, row by row and scenario by scenario; exit 1 on any difference."""
    comparisons = compare(load_published(published), collect(results))
    console = Console()
    for item in comparisons:
        scores = f"published {item.published or '-'}, rerun {item.rerun or '-'}"
        console.print(f"[{COLOURS[item.status]}]{item.status.upper():<10}[/] {item.key} ({scores})", soft_wrap=True)
        for difference in item.differences if item.status != "reproduced" else []:
            console.print(f"           - {difference}", soft_wrap=True)
    reproduced = sum(item.status == "reproduced" for item in comparisons)
    console.print(f"{reproduced} of {len(comparisons)} rows reproduced")
    if reproduced != len(comparisons):
        raise typer.Exit(1)
