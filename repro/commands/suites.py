"""`repro suites fetch`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.core.config import DEFAULT_MATRIX
from repro.core.terminal import shown
from repro.spec.matrix import load_matrix
from repro.suites.selection import select
from repro.suites.sources import fetch_suite

app = typer.Typer(help="Fetch the pinned external suites of a matrix (suites with a source or an external harness).", no_args_is_help=True)


@app.command()
def fetch(matrix: Path = typer.Argument(DEFAULT_MATRIX, help="Matrix file whose suites to fetch.")) -> None:
    """Fetch, verify (sha256) and unpack every suite with a source; suites in the project need nothing."""
    console = Console(highlight=False)  # ids, sources and log lines are input: printed escaped (shown)
    loaded = load_matrix(matrix)
    external = [suite for suite in loaded.matrix.suites if suite.source is not None]
    for suite in external:
        assert suite.source is not None
        fetch_suite(suite.source, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True))
        selection = select(suite)
        console.print(f"[green]OK[/]   {shown(suite.id)}: {len(selection.ids)} scenarios from {shown(suite.source.describe())}", soft_wrap=True)
    from repro.suites.external.wheels import fetch_wheels

    harnesses = [suite for suite in loaded.matrix.suites if suite.external is not None]
    for suite in harnesses:
        assert suite.external is not None
        fetch_wheels(suite.external, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True))
        selection = select(suite)
        console.print(f"[green]OK[/]   {shown(suite.id)}: {len(selection.ids)} tasks of {shown(suite.external.wheel)} (sha256 verified)", soft_wrap=True)
    external += harnesses
    console.print(f"{len(external)} external suite(s) ready; {len(loaded.matrix.suites) - len(external)} in the project")
