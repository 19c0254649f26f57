"""`repro claims validate | schema | from-results`."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console

from repro.commands.vocabulary import Typer
from repro.core.errors import BadInput
from repro.core.files import atomic_write
from repro.core.terminal import shown
from repro.core.yamlsource import require_file_target
from repro.spec.claims import Source, dump_claims, load_claims
from repro.spec.claims import claims_json_schema as schema_of_claims
from repro.spec.engines import ENGINE_KINDS, UNRECORDED_KIND

app = Typer(
    help="Claims files: someone's published numbers, stated as data to verify a rerun against.", no_args_is_help=True
)
console = Console()


@app.command()
def validate(files: list[Path] = typer.Argument(..., help="Claims files to validate.")) -> None:
    """Validate claims files: one `FILE:LINE field: reason` line per problem.

    Exit codes: 0 every file is valid; 1 an unexpected error; 2 bad input (a file has a problem)."""
    problems: list[str] = []
    for path in files:
        try:
            loaded = load_claims(path)
        except BadInput as error:
            problems += error.lines
            continue
        claims = loaded.claims
        console.print(
            f"[green]OK[/] {shown(path)} ({len(claims.claims)} claims, "
            f"{len(claims.models)} models, sha256 {loaded.sha256[:12]})",
            highlight=False,
        )
    if problems:
        raise BadInput(problems[0], lines=problems)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the claims format (for editor completion).

    Exit codes: 0 printed; 1 an unexpected error; 2 bad input."""
    typer.echo(json.dumps(schema_of_claims(), indent=2))


@app.command("from-results")
def from_results(
    results: list[Path] = typer.Argument(..., help="Run folders or results folders (the published bundle)."),
    citation: str = typer.Option(..., "--citation", help="Who publishes these rows, and where."),
    url: str = typer.Option(None, "--url", help="Where a reader finds them."),
    document: str = typer.Option(
        None, "--path", help="Or the file of this project that publishes them (e.g. paper/published/smoke-cpu.json)."
    ),
    date: str = typer.Option(None, "--date", help="YYYY-MM-DD (default: today, UTC)."),
    revision: str = typer.Option(None, "--revision", help="The version published: a commit, a release."),
    out: Path = typer.Option(..., "--out", help="The claims file to write (YAML)."),
    harness: str = typer.Option(
        "repro", "--harness", help="With a results.json: the harness that scored it (a bundle records it)."
    ),
    harness_commit: str = typer.Option(
        None, "--harness-commit", help="With a results.json: the project commit of the run (40 hex)."
    ),
    engine_kind: str = typer.Option(
        UNRECORDED_KIND,
        "--engine-kind",
        help=f"With a results.json: the engine's kind, one of {', '.join(ENGINE_KINDS)} (a bundle records it).",
    ),
) -> None:
    """State a run's VALID rows as a claims file: every scenario's outcome and transcript sha256
    (from a bundle; or from a results.json, with the harness and engine kind it does not record).

    Exit codes: 0 written; 1 an unexpected error; 2 bad input."""
    from repro.spec.harnesses import HarnessPin
    from repro.verify.own_claims import stated_claims
    from repro.verify.rerun_rows import load_published_rows, load_rerun

    require_file_target(out, "claims file")
    try:
        source = Source.model_validate(
            {
                "citation": citation,
                "url": url,
                "path": document,
                "date": date or datetime.datetime.now(datetime.UTC).date(),
                "revision": revision,
            }
        )
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = f"--{first['loc'][0]}: " if first["loc"] else ""  # a rule across options (--url or --path) names none
        raise BadInput(f"{where}{first['msg']}") from None
    if len(results) == 1 and results[0].is_file():  # a results.json: its rows, with what it does not record
        rerun = load_published_rows(results[0], HarnessPin(name=harness, commit=harness_commit), engine_kind)
    else:
        rerun = load_rerun(results)
    claims = stated_claims(rerun, source, results[0])
    header = f"# Written by repro claims from-results; verify a rerun with: repro verify RUN --claims {out.name}\n"
    atomic_write(out, dump_claims(claims, header).encode())
    load_claims(out)  # what was written reads back as a valid claims file
    console.print(f"wrote {shown(out)} ({len(claims.claims)} claims)", soft_wrap=True)
