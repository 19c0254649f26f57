"""`repro external report`: an external harness's own report, rendered again from a bundle."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import typer
from rich.console import Console
from rich.markup import escape

from repro.bundle.layout import BundleReader, find_runs
from repro.core.errors import BadInput
from repro.core.files import atomic_write

app = typer.Typer(help="External suites (another project's harness run sealed): their own reports.", no_args_is_help=True)


@app.command("report")
def report(
    results: Path = typer.Argument(..., help="A run folder, or a results folder holding runs."),
    out: Path = typer.Option(Path("paper/external"), "--out", help="Folder for the reports: <out>/<cell-id>/<file>."),
) -> None:
    """Render each external cell's own report (ToolCallBench: Markdown and HTML) from its raw outputs."""
    from repro.suites.external import adapter_for
    from repro.suites.external.base import RAW_PREFIX
    from repro.suites.external.check import raw_evidence, wheel_root

    console = Console(highlight=False)
    written = 0
    for run_dir in find_runs(results):
        bundle = BundleReader(run_dir)
        for cell_id in bundle.cell_ids():
            record = bundle.cell(cell_id)
            if record.cell.suite.external is None or record.status != "done":
                continue
            ev = SimpleNamespace(record=record, bundle=bundle, cell_id=cell_id, suite_dir=bundle.suite_dir(record.cell.suite.id))
            raw, index = raw_evidence(ev)  # type: ignore[arg-type]
            for name, data in adapter_for(record.cell.suite).report(raw, index, wheel_root(ev)).items():  # type: ignore[arg-type]
                target = out / cell_id / name.removeprefix(RAW_PREFIX).split("__")[-1]
                atomic_write(target, data)
                same = "the recorded one" if raw.get(name) == data else "[red]not the recorded one[/]"
                console.print(f"{escape(str(target))}: {same}", soft_wrap=True)
                written += 1
    if not written:
        raise BadInput(f"{results}: no cell of an external suite ran here")
