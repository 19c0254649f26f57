"""`repro suites fetch`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.core.config import DEFAULT_MATRIX
from repro.core.terminal import shown
from repro.spec.matrix import load_matrix
from repro.suites.registry import kind_of

app = typer.Typer(help="Fetch the pinned external suites of a matrix (suites with a source or an external harness).", no_args_is_help=True)


@app.command()
def fetch(matrix: Path = typer.Argument(DEFAULT_MATRIX, help="Matrix file whose suites to fetch.")) -> None:
    """Fetch, verify (sha256) and unpack every suite with a source; suites in the project need nothing."""
    console = Console(highlight=False)  # ids, sources and log lines are input: printed escaped (shown)
    loaded = load_matrix(matrix)
    ready = 0
    for suite in loaded.matrix.suites:
        said = kind_of(suite).fetch(suite, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True))
        if said is not None:
            console.print(f"[green]OK[/]   {shown(suite.id)}: {shown(said)}", soft_wrap=True)
            ready += 1
    console.print(f"{ready} external suite(s) ready; {len(loaded.matrix.suites) - ready} in the project")
