"""`repro results merge`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.bundle import merge as merge_bundles

app = typer.Typer(help="Work with result bundles.", no_args_is_help=True)


@app.command()
def merge(
    sources: list[Path] = typer.Argument(..., help="Run folders or results folders (e.g. one per shard)."),
    out: Path = typer.Option(..., "--out", help="The merged results folder."),
) -> None:
    """Join shard bundles of one matrix and profile into one results folder (bundles copied unchanged)."""
    merged = merge_bundles(sources, out)
    console = Console()
    for path in merged:
        console.print(f"merged {path}")
    console.print(f"{len(merged)} bundles in {out}; check them with: repro check {out}")
