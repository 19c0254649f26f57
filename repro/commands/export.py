"""`repro export inspect RUN --out DIR`: every cell as an inspect_ai eval log; `repro export eee`
and `repro export hf`: every VALID cell as Every Eval Ever records and Hugging Face `.eval_results`
entries (repro.report.eee).

Each export judges every cell with `repro check` first and writes the VALID ones (and those its
options ask for); every cell it leaves out is named on stderr, one line each with its verdict and
first reason, and it exits as `repro check` would on those verdicts (1 a cell INVALID, 3 a cell
UNCHECKED and none INVALID).

inspect_ai is the optional `inspect` extra: it is imported here, lazily, when the command runs,
and its absence is one line (exit 2). Nothing else in repro imports it.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import typer
from rich.console import Console

from repro.check.verdict import exit_status
from repro.commands.vocabulary import Typer
from repro.core.config import extra_pin
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.core.yamlsource import require_file_target
from repro.report.export import CellLog, Export, export_runs

INSTALL_HINT = f"pip install '{extra_pin('inspect', 'inspect-ai')}' (repro's inspect extra)"

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
    """Write one inspect_ai eval log per VALID cell (open them with `inspect view --log-dir DIR`);
    every cell left out is named on stderr with its verdict and first reason.

    Exit codes: 0 every cell VALID or EXCLUDED; 1 a cell INVALID, or an unexpected error; 2 bad input
    (a missing inspect extra too); 3 a cell UNCHECKED and none INVALID (as `repro check` exits)."""
    module = inspect_writer()
    include = {"VALID"} | ({"INVALID"} if invalid else set()) | ({"EXCLUDED"} if excluded else set())

    def write(cell: CellLog, path: Path) -> None:
        module.write_log(module.eval_log(cell), path)

    done = export_runs(results, out, include, write)
    report(done, include, f"logs in {shown(out)}; view them with: inspect view --log-dir {shown(out)}")


@app.command("eee")
def eee(
    results: Path = typer.Argument(..., help="A run folder, or a results folder of runs (a merged folder too)."),
    out: Path = typer.Option(
        ...,
        "--out",
        help="The folder: <out>/<run-id>/data/<suite>/<family>/<model>/<uuid>.json and <uuid>_samples.jsonl, "
        "Every Eval Ever's datastore layout (never inside a bundle).",
    ),
    bundle_url: str | None = typer.Option(
        None, "--bundle-url", help="Where the bundle is published (each record's source_data url)."
    ),
) -> None:
    """Write each VALID cell as an Every Eval Ever aggregate record and its instance-level lines
    (schema 0.3.0), with the cell's pins in their details (docs/inspect-export.md); every cell
    left out is named on stderr with its verdict and first reason.

    Exit codes: 0 every cell VALID or EXCLUDED; 1 a cell INVALID, or an unexpected error; 2 bad input;
    3 a cell UNCHECKED and none INVALID (as `repro check` exits)."""
    from repro.report.eee import aggregate, datastore_path, instance_lines

    def write(cell: CellLog, path: Path) -> Path:
        samples = instance_lines(cell)
        place = datastore_path(cell)
        target = require_file_target(path.parent / f"{place}.json", "record file")
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / f"{target.stem}_samples.jsonl").write_bytes(samples)
        record = aggregate(cell, f"{place}_samples.jsonl", samples, bundle_url)
        target.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return target

    report(export_runs(results, out, {"VALID"}, write, ".json"), {"VALID"}, f"Every Eval Ever records in {shown(out)}")


@app.command("hf")
def hf(
    results: Path = typer.Argument(..., help="A run folder, or a results folder of runs (a merged folder too)."),
    out: Path = typer.Option(
        ..., "--out", help="The folder: <out>/<run-id>/<cell-id>.yaml, for a model repository's .eval_results/."
    ),
    dataset_id: str = typer.Option(..., "--dataset-id", help="The benchmark's dataset on the Hub (dataset.id)."),
    bundle_url: str = typer.Option(..., "--bundle-url", help="Where the bundle is published (source.url)."),
) -> None:
    """Write each VALID cell as a Hugging Face `.eval_results/` entry (huggingface_hub's own
    EvalResultEntry), its notes holding the cell's pins, one `key: value` a line
    (docs/inspect-export.md); every cell left out is named on stderr with its verdict and first reason.

    Exit codes: 0 every cell VALID or EXCLUDED; 1 a cell INVALID, or an unexpected error; 2 bad input;
    3 a cell UNCHECKED and none INVALID (as `repro check` exits)."""
    from repro.report.eee import hf_entry_yaml

    def write(cell: CellLog, path: Path) -> None:
        path.write_text(hf_entry_yaml(cell, dataset_id, bundle_url))

    report(
        export_runs(results, out, {"VALID"}, write, ".yaml"),
        {"VALID"},
        f"Hugging Face eval result entries in {shown(out)}",
    )


def report(done: Export, include: set[str], what: str) -> None:
    """What was written (stdout), each cell left out with its verdict and first reason (stderr, one
    line each), then the exit `repro check` gives the verdicts."""
    console = Console(highlight=False)
    for log in done.logs:
        mark = "" if log.verdict == "VALID" else f" ({log.verdict})"
        console.print(f"wrote {shown(log.path)}: {log.passed} of {log.samples} passed{mark}", soft_wrap=True)
    left_out = done.left_out(include)
    more = f"; {len(left_out)} left out, named on stderr" if left_out else ""
    console.print(f"{len(done.logs)} {what}{more}", soft_wrap=True)
    errors = Console(stderr=True, highlight=False)
    for line in left_out:
        errors.print(f"left out: {shown(line)}", soft_wrap=True)
    code = exit_status(done.verdicts)
    if code:
        raise typer.Exit(code)
