"""`repro compare A B [--fail-on worse] [--runtime-a ID] [--runtime-b ID]`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console

from repro.core.errors import BadInput
from repro.core.terminal import printable
from repro.report.tables import PaperTables
from repro.spec.runtimes import RAW
from repro.verify.compare import Comparison, RowChange, compare, load_tables

COLOURS = {"better": "green", "worse": "red", "no clear difference": "yellow"}


class FailOn(StrEnum):
    worse = "worse"


def compare_command(
    before: Path = typer.Argument(
        ..., metavar="A", help="A: a bundle, a results folder, or a results.json (the baseline)."
    ),
    after: Path = typer.Argument(..., metavar="B", help="B: the same kinds of input, compared with A."),
    fail_on: FailOn | None = typer.Option(None, "--fail-on", help="Exit 1 when any row is worse (for CI)."),
    runtime_a: str | None = typer.Option(
        None, "--runtime-a", help="Only A's rows of this agent runtime (raw: our own client's)."
    ),
    runtime_b: str | None = typer.Option(
        None, "--runtime-b", help="Only B's rows of this agent runtime: with A and B one bundle, the runtime effect."
    ),
) -> None:
    """Compare two sets of results row by row: settings that differ, pass-rate change with a
    verdict, flips, failure types. With `--runtime-a raw --runtime-b ID` on one bundle: the effect of
    an agent runtime against our own client, row by row (docs/runtimes.md).

    Exit codes: 0 compared; 1 a row is worse (with --fail-on worse); 2 bad input."""
    a = of_runtime(load_tables(before), runtime_a, "--runtime-a")
    comparison = compare(a, of_runtime(load_tables(after), runtime_b, "--runtime-b"))
    console = Console(highlight=False)
    print_comparison(console, comparison)
    if fail_on is FailOn.worse and any(row.verdict == "worse" for row in comparison.rows):
        raise typer.Exit(1)


def of_runtime(tables: PaperTables, runtime: str | None, option: str) -> PaperTables:
    """The tables' rows of one agent runtime (`raw`: our own client's), or all of them (None)."""
    if runtime is None:
        return tables
    rows = [row for row in tables.rows if (row.runtime or RAW) == runtime]
    if not rows:
        held = sorted({row.runtime or RAW for row in tables.rows})
        raise BadInput(f"{option} {runtime}: no row of that runtime (the rows' runtimes: {', '.join(held)})")
    return tables.model_copy(update={"rows": rows})


def print_comparison(console: Console, comparison: Comparison) -> None:
    settings = comparison.settings
    console.print(
        "settings that differ: " + (printable("; ".join(s.describe() for s in settings)) if settings else "none"),
        soft_wrap=True,
        markup=False,
    )
    for row in comparison.rows:
        print_row(console, row)
    for key in comparison.only_before:
        console.print(f"only in A: {printable(key)}", soft_wrap=True, markup=False)
    for key in comparison.only_after:
        console.print(f"only in B: {printable(key)}", soft_wrap=True, markup=False)
    verdicts = [row.verdict for row in comparison.rows]
    console.print(
        f"{len(verdicts)} rows compared: {verdicts.count('better')} better, {verdicts.count('worse')} worse, "
        f"{verdicts.count('no clear difference')} no clear difference"
    )


def print_row(console: Console, row: RowChange) -> None:
    name = row.before_key if row.before_key == row.after_key else f"{row.before_key} -> {row.after_key}"
    scores = f"{row.before[0]}/{row.before[1]} -> {row.after[0]}/{row.after[1]} ({100 * row.change:+.1f} points)"
    console.print(f"[{COLOURS[row.verdict]}]{row.verdict.upper()}[/] ", end="")
    console.print(f"{printable(name)}: {scores}, {printable(evidence(row))}", soft_wrap=True, markup=False)
    for setting in row.settings:
        console.print(f"    setting {printable(setting.describe())}", soft_wrap=True, markup=False)
    for direction in ("fixed", "broken", "changed"):
        flipped = [f.scenario for f in row.flips if f.direction == direction]
        if flipped:
            console.print(
                f"    {direction} ({len(flipped)}): {printable(', '.join(flipped))}", soft_wrap=True, markup=False
            )
    for failure, (old, new) in row.failure_types.items():
        console.print(f"    failure type {printable(failure)}: {old} -> {new}", soft_wrap=True, markup=False)


def evidence(row: RowChange) -> str:
    if row.test == "paired" and row.p_value is not None:
        return f"exact McNemar p={row.p_value:.3g} on the same scenarios"
    if row.interval is not None:
        return (
            f"unpaired, 95% interval of the change {100 * row.interval.low:+.1f} to {100 * row.interval.high:+.1f} "
            "points"
        )
    return "no test"
