"""`repro results merge` and `repro results csv`."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.console import Console

from harness.scoring import lab_code
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import merge as merge_bundles
from repro.bundle.layout.reader import BundleReader
from repro.commands.vocabulary import Typer
from repro.core.files import atomic_write
from repro.core.terminal import shown
from repro.core.yamlsource import require_file_target

CSV_COLUMNS = (
    "run cell model engine protocol repeat scenario category passed failure_type lab_code steps seconds tokens_in "
    "tokens_out"
).split()
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

app = Typer(help="Work with result bundles.", no_args_is_help=True)


@app.command()
def merge(
    sources: list[Path] = typer.Argument(..., help="Run folders or results folders (e.g. one per shard)."),
    out: Path = typer.Option(..., "--out", help="The merged results folder."),
) -> None:
    """Join shard bundles of one matrix and profile into one results folder (bundles copied unchanged).

    Exit codes: 0 merged; 1 an unexpected error; 2 bad input."""
    merged = merge_bundles(sources, out)
    console = Console()
    for path in merged:
        console.print(f"merged {shown(path)}", soft_wrap=True)
    console.print(f"{len(merged)} bundles in {shown(out)}; check them with: repro check {shown(out)}", soft_wrap=True)


@app.command("csv")
def csv_export(
    results: Path = typer.Argument(..., help="A run folder or a results folder."),
    out: Path | None = typer.Option(None, "--out", help="The CSV file (standard output when omitted)."),
) -> None:
    """Per-scenario results of a bundle as CSV: one row per scenario, repeat and cell (complete
    cells, any verdict).

    Exit codes: 0 written; 1 an unexpected error; 2 bad input."""
    if out is not None:
        require_file_target(out, "CSV file")
    rows = list(scenario_rows(results))
    text = to_csv(rows)
    if out is None:
        sys.stdout.write(text)
        return
    atomic_write(out, text.encode())
    Console(stderr=True).print(f"wrote {len(rows)} scenario rows to {shown(out)}", soft_wrap=True)


def to_csv(rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows([_cell_text(value) for value in row] for row in rows)
    return buffer.getvalue()


def scenario_rows(results: Path) -> Iterator[list[object]]:
    for run_dir in find_runs(results):
        bundle = BundleReader(run_dir)
        run_id = bundle.run().run_id
        for cell_id in bundle.cell_ids():
            cell = bundle.cell(cell_id).cell
            for r in bundle.results(cell_id):
                yield [
                    run_id,
                    cell.id,
                    cell.model.id,
                    cell.engine.id,
                    cell.protocol,
                    cell.repeat,
                    r.id,
                    r.category,
                    r.passed,
                    r.failure_type or "",
                    lab_code(r.failure_type) or "",
                    r.steps,
                    r.seconds,
                    r.tokens_in,
                    r.tokens_out,
                ]


def _cell_text(value: object) -> object:
    """Text a spreadsheet would run as a formula is quoted (a bundle may come from anyone)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
