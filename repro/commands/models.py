"""`repro models fetch | list | describe`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from repro.commands.vocabulary import Typer, matrix_argument
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.spec.loading import load_matrix
from repro.spec.matrix import ModelSpec
from repro.store import models
from repro.store.describe import describe as describe_gguf
from repro.store.describe import spec_yaml

app = Typer(
    help="Fetch, verify and list the models of a matrix (a content-addressed store of GGUF files).",
    no_args_is_help=True,
)
console = Console(stderr=True, highlight=False)  # ids, sources, paths and reasons are input: printed escaped (shown)
out = Console(highlight=False)


class RichProgress(models.Progress):
    """One progress bar per model while its bytes stream through the hash."""

    def __init__(self, bars: Progress) -> None:
        self.bars = bars
        self.tasks: dict[str, TaskID] = {}

    def status(self, model_id: str, text: str) -> None:
        self.bars.console.print(f"[dim]{shown(model_id)}: {shown(text)}[/]", soft_wrap=True)

    def start(self, model_id: str, source: str, total: int | None) -> None:
        self.tasks[model_id] = self.bars.add_task(f"{shown(model_id)} [dim]{shown(source[:60])}[/]", total=total)

    def advance(self, model_id: str, count: int) -> None:
        if model_id in self.tasks:
            self.bars.advance(self.tasks[model_id], count)

    def finish(self, model_id: str) -> None:
        if model_id in self.tasks:
            self.bars.remove_task(self.tasks.pop(model_id))


@app.command()
def fetch(
    matrix: Path = matrix_argument(help="Matrix file whose models to fetch (default: the embedded matrix/smoke.yaml)."),
    model: list[str] = typer.Option(None, "--model", help="Only these model ids (repeatable)."),
) -> None:
    """Fetch and verify every model of a matrix into the store; models already there are not downloaded.

    Exit codes: 0 every model is verified in the store; 1 a model could not be fetched or verified; 2 bad input."""
    specs = _select(matrix, model)
    loaded = load_matrix(matrix)
    # paths_from: matrix: a model's path is in the matrix's folder
    base_dir = loaded.root if loaded.outside else Path.cwd()
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    problems: list[str] = []
    with bars:
        reporter = RichProgress(bars)
        for spec in specs:
            try:
                stored = models.fetch(spec, base_dir=base_dir, progress=reporter)
            except models.ModelError as error:
                problems += error.lines
                for line in error.lines:
                    bars.console.print(f"[red]FAIL[/] {shown(line)}", soft_wrap=True)
                continue
            verb = f"fetched from {stored.source}" if stored.downloaded else "already in the store"
            reads_model = any(not e.facts.in_harness_image for e in loaded.matrix.engines)
            template = _template_line(spec, stored.path, read=reads_model)
            if template.startswith("FAIL "):
                problems.append(template[5:])
                bars.console.print(f"[red]FAIL[/] {shown(template[5:])}", soft_wrap=True)
                continue
            bars.console.print(
                f"[green]OK[/]   {shown(spec.id)}: sha256 {spec.sha256[:12]} {stored.size} bytes, "
                f"{shown(verb)}; {shown(template)}",
                soft_wrap=True,
            )
            for skipped in stored.skipped_sources:
                bars.console.print(f"       [yellow]skipped[/] {shown(skipped)}", soft_wrap=True)
    if problems:
        raise models.ModelError(problems[0], lines=problems)
    out.print(f"{len(specs)} models verified in {shown(models.store_dir())}", soft_wrap=True)


@app.command("list")
def list_(
    matrix: Path = matrix_argument(help="Matrix file whose models to list (default: the embedded matrix/smoke.yaml)."),
) -> None:
    """List the models of a matrix and whether a verified copy is in the store.

    Exit codes: 0 listed (absent or corrupt copies too); 1 an unexpected error; 2 bad input."""
    for spec in _select(matrix, None):
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


def _template_line(spec: ModelSpec, gguf: Path, *, read: bool = True) -> str:
    """What the model's chat template carries, in a few words; "FAIL <reason>" when it has none.
    Not read (`read` false) where only scripted engines serve it: their model file is a scenario
    archive, no GGUF."""
    if not read:
        return "no chat template (only scripted engines serve it: a scenario archive)"
    from repro.store.chat_template import template_facts

    try:
        facts = template_facts(spec, gguf)
    except BadInput as error:
        return f"FAIL {error}"
    carries = [name for name, ok in (("tools", facts.renders_tools), ("tool calls", facts.renders_tool_calls)) if ok]
    turn = (
        f"end of turn {facts.end_of_turn} ({'EOG' if facts.end_of_turn_is_eog else 'NOT an end-of-generation token'})"
    )
    return (
        f"chat template from {facts.source} sha256 {facts.sha256[:12]}, "
        f"renders {', '.join(carries) or 'no tools'}, {turn}"
    )


def _select(matrix: Path, wanted: list[str] | None) -> list:
    loaded = load_matrix(matrix)
    specs = models.unique_models(loaded.matrix.models)
    if wanted:
        unknown = sorted(set(wanted) - {s.id for s in specs})
        if unknown:
            raise BadInput(
                f"unknown model id(s): {', '.join(unknown)} (the matrix has: {', '.join(s.id for s in specs)})"
            )
        specs = [s for s in specs if s.id in wanted]
    return specs
