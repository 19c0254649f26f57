"""`repro compose env`: the .env for docker-compose.yml (one cell by hand, not clean-room)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.commands.vocabulary import PROFILE, Typer, matrix_argument
from repro.core.errors import BadInput
from repro.core.terminal import printable, shown

app = Typer(help="One cell by hand with docker-compose (not clean-room: no bundle, no gate).", no_args_is_help=True)
err = Console(stderr=True, highlight=False)


@app.command("env")
def env_command(
    ctx: typer.Context,
    matrix: Path = matrix_argument(None, help="Matrix file (or take the cell from a bundle with --from)."),
    profile: str = PROFILE,
    cell: str = typer.Option(
        None,
        "--cell",
        help="Cell id (see: repro matrix plan MATRIX --profile P); optional with --from when the bundle has one cell.",
    ),
    from_run: Path = typer.Option(
        None, "--from", help="A result bundle (results/<run-id>): its cell, profile and image ids."
    ),
    out: Path = typer.Option(Path(".env"), "--out", help="Where to write the .env (docker-compose reads ./.env)."),
    out_dir: Path = typer.Option(
        None, "--out-dir", help="The harness's output folder (default: results/compose/<run id>, ignored by git)."
    ),
) -> None:
    """Write the .env that docker-compose.yml reads to run one cell sealed as a run seals it.

    Exit codes: 0 written; 1 Docker or a store failed; 2 bad input."""
    from repro.run.compose import default_out_dir, from_bundle, from_matrix, new_run_id, prepare_out, write_env

    if from_run is not None:
        if matrix is not None or given(ctx, "profile"):
            raise BadInput("give either MATRIX --cell CELL [--profile P], or --from RUN_DIR [--cell CELL]")
        source = from_bundle(from_run, cell)
    else:
        if matrix is None or cell is None:
            raise BadInput("repro compose env needs MATRIX --cell CELL [--profile P] (or --from RUN_DIR)")
        source = from_matrix(matrix, profile, cell)
    run_id = new_run_id(source.cell.id)
    folder = (out_dir or default_out_dir(run_id)).resolve()
    prepare_out(folder)
    from repro.run.compose import compose_env

    values = compose_env(source, out_dir=folder, run_id=run_id)
    write_env(values, out)
    for note in source.notes:
        err.print(f"[yellow]note[/] {shown(note)}", soft_wrap=True)
    err.print(
        f"cell     {shown(source.cell.id)} on {shown(source.profile_name)} ({len(source.suite.ids)} scenarios)",
        soft_wrap=True,
    )
    err.print(
        f"run id   {shown(run_id)} (label repro.run; repro cleanup --run-id {shown(run_id)} removes leftovers)",
        soft_wrap=True,
    )
    err.print(f"output   {shown(folder)}", soft_wrap=True)
    err.print("not clean-room: no bundle, no latency gate, no identity check (docs/compose.md)")
    err.print("run:     docker-compose up -d engine && docker-compose run --rm -T harness; docker-compose down -v")
    typer.echo(printable(out))


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter was typed on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"
