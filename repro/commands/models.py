"""`repro models fetch | list | describe`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.commands.steps import fetch_models, select_models
from repro.commands.vocabulary import Typer, matrix_argument
from repro.core.terminal import shown
from repro.store import models
from repro.store.describe import describe as describe_gguf
from repro.store.describe import spec_yaml

app = Typer(
    help="Fetch, verify and list the models of a matrix (a content-addressed store of GGUF files).",
    no_args_is_help=True,
)
console = Console(stderr=True, highlight=False)  # ids, sources, paths and reasons are input: printed escaped (shown)
out = Console(highlight=False)


@app.command()
def fetch(
    matrix: Path = matrix_argument(help="Matrix file whose models to fetch (default: the embedded matrix/smoke.yaml)."),
    model: list[str] = typer.Option(None, "--model", help="Only these model ids (repeatable)."),
) -> None:
    """Fetch and verify every model of a matrix into the store; models already there are not downloaded.

    Exit codes: 0 every model is verified in the store; 1 a model could not be fetched or verified; 2 bad input."""
    fetch_models(matrix, model)


@app.command("list")
def list_(
    matrix: Path = matrix_argument(help="Matrix file whose models to list (default: the embedded matrix/smoke.yaml)."),
) -> None:
    """List the models of a matrix and whether a verified copy is in the store.

    Exit codes: 0 listed (absent or corrupt copies too); 1 an unexpected error; 2 bad input."""
    for spec in select_models(matrix, None):
        path = models.stored_path(spec.sha256)
        if not path.exists():
            state = "[yellow]absent[/]"
        elif models.verify_stored(path, spec.sha256):
            state = "[green]stored[/]"
        else:
            state = "[red]corrupt[/]"
        out.print(
            f"{state:<20} {shown(spec.id):<32} {shown(spec.quant):<8} {spec.file_size / 1e6:8.1f} MB  sha256 "
            f"{spec.sha256[:12]}  {shown(path)}",
            soft_wrap=True,
        )


@app.command()
def describe(
    file: Path = typer.Argument(..., metavar="FILE", help="A GGUF file (a regular file, not a link)."),
    as_json: bool = typer.Option(False, "--json", help="Print the description as JSON, for machines."),
) -> None:
    """Print the model spec of a GGUF file, to paste into a matrix's models: list.

    The id is suggested from the header's general.name and the quantization (general.file_type);
    family and parameters come from general.basename and general.size_label when the header
    holds them; file_size and sha256 from the file's bytes. The architecture, the trained
    context, and the embedded chat template (its sha256 and what it can carry, as the plan's
    preflight derives it) are comments. Replace the path source with the file's place, or add
    a url, hf or pypi source (docs/matrix.md).

    Exit codes: 0 described; 1 the file could not be read to its end; 2 bad input (not a regular
    file, a link, not a GGUF, a truncated or hostile header).
    """
    described = describe_gguf(file)
    if as_json:
        typer.echo(described.model_dump_json(indent=2))
        return
    typer.echo(spec_yaml(described, str(file) if not file.is_absolute() else file.name), nl=False)
