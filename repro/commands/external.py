"""`repro external report`: an external harness's own report, rendered again from a bundle."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.reader import BundleReader
from repro.commands.vocabulary import Typer
from repro.core.errors import BadInput
from repro.core.files import MAX_RAW_BYTES, atomic_write

app = Typer(help="External suites (another project's harness run sealed): their own reports.", no_args_is_help=True)


@app.command("report")
def report(
    results: Path = typer.Argument(..., help="A run folder, or a results folder holding runs."),
    out: Path = typer.Option(Path("paper/external"), "--out", help="Folder for the reports: <out>/<cell-id>/<file>."),
) -> None:
    """Render each external cell's own report (ToolCallBench: Markdown and HTML) from its raw outputs.

    Exit codes: 0 rendered; 1 an unexpected error; 2 bad input (no external cell ran here too)."""
    from repro.suites.external.raw import RAW_PREFIX
    from repro.suites.registry import kind_of

    console = Console(highlight=False)
    written = 0
    for run_dir in find_runs(results):
        bundle = BundleReader(run_dir)
        for cell_id in bundle.cell_ids():
            record = bundle.cell(cell_id)
            if record.status != "done":
                continue
            try:
                rendered = kind_of(record.cell.suite).report(bundle, cell_id)
            except BadInput:
                continue  # a kind without a report of its own (our scenario suites)
            recorded = {
                name: bundle.cell_file(cell_id, name, MAX_RAW_BYTES) for name in rendered if name in record.files
            }
            for name, data in rendered.items():
                target = out / cell_id / name.removeprefix(RAW_PREFIX).split("__")[-1]
                atomic_write(target, data)
                same = "the recorded one" if recorded.get(name) == data else "[red]not the recorded one[/]"
                console.print(f"{escape(str(target))}: {same}", soft_wrap=True)
                written += 1
    if not written:
        raise BadInput(f"{results}: no cell of an external suite ran here")
