"""`repro export inspect RUN --out DIR`: every cell as an inspect_ai eval log.

inspect_ai is the optional `inspect` extra: it is imported here, lazily, when the command runs,
and its absence is one line (exit 2). Nothing else in repro imports it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import typer
from rich.console import Console

from repro.commands.vocabulary import Typer
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.report.export import CellLog, export_runs

INSTALL_HINT = "pip install 'repro[inspect]' (inspect-ai==0.3.285)"

app = Typer(help="Results in other tools' formats.", no_args_is_help=True)


def inspect_writer() -> ModuleType:
    """repro.report.inspect_log, which imports inspect_ai; BadInput when the extra is missing."""
    try:
        inspect_log = importlib.import_module("repro.report.inspect_log")
    except ImportError as error:
        if (error.name or "").split(".")[0] != "inspect_ai":
            raise
        raise BadInput(f"repro export inspect needs inspect_ai, which is not installed: {INSTALL_HINT}") from None
    return inspect_log


@app.command("inspect")
def inspect(
    results: Path = typer.Argument(..., help="A run folder, or a results folder of runs (a merged folder too)."),
    out: Path = typer.Option(
        ..., "--out", help="The folder for the logs: <out>/<run-id>/<cell-id>.eval (never inside a bundle)."
    ),
    invalid: bool = typer.Option(
        False, "--invalid", help="Also export INVALID cells, marked so (status error, <cell>.INVALID.eval)."
    ),
    excluded: bool = typer.Option(
        False, "--excluded", help="Also export EXCLUDED cells, marked so (status error, <cell>.EXCLUDED.eval)."
    ),
) -> None:
    """Write one inspect_ai eval log per VALID cell (open them with `inspect view --log-dir DIR`).

    Exit codes: 0 written; 1 an unexpected error; 2 bad input (a missing inspect extra too)."""
    module = inspect_writer()
    include = {"VALID"} | ({"INVALID"} if invalid else set()) | ({"EXCLUDED"} if excluded else set())

    def write(cell: CellLog, path: Path) -> None:
        module.write_log(module.eval_log(cell), path)

    exported = export_runs(results, out, include, write)
    console = Console(highlight=False)
    for log in exported:
        mark = "" if log.verdict == "VALID" else f" ({log.verdict})"
        console.print(f"wrote {shown(log.path)}: {log.passed} of {log.samples} passed{mark}", soft_wrap=True)
    console.print(
        f"{len(exported)} logs in {shown(out)}; view them with: inspect view --log-dir {shown(out)}", soft_wrap=True
    )
