"""The `repro` command line: one sub-command group per stage of the data flow."""

from __future__ import annotations

import typer

from repro import __version__
from repro.commands import check as check_commands
from repro.commands import claims as claims_commands
from repro.commands import cleanup as cleanup_commands
from repro.commands import compare as compare_commands
from repro.commands import compose as compose_commands
from repro.commands import doctor as doctor_commands
from repro.commands import export as export_commands
from repro.commands import external as external_commands
from repro.commands import images as images_commands
from repro.commands import matrix as matrix_commands
from repro.commands import models as models_commands
from repro.commands import paper as paper_commands
from repro.commands import rerun as rerun_commands
from repro.commands import results as results_commands
from repro.commands import scale as scale_commands
from repro.commands import sign as sign_commands
from repro.commands import suites as suites_commands
from repro.commands import verify as verify_commands
from repro.commands.vocabulary import Typer
from repro.core.config import require_checkout

app = Typer(
    name="repro",
    help="Clean-room reproducibility for agent benchmarks of local LLMs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"repro {__version__}")
        raise typer.Exit()


# The command groups that read the project tree (matrices, Dockerfiles, scenarios, docker-compose.yml);
# the others (check, verify, paper, compare, results, sign, cleanup, doctor) work from an installed
# wheel. `repro matrix schema` needs no tree either (its group decides: repro/commands/matrix.py).
CHECKOUT_COMMANDS = {"images", "compose", "models", "scale", "suites", "external", "rerun"}


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Clean-room reproducibility for agent benchmarks of local LLMs.

    Exit codes: 0 success; 1 the command ran and found a failure (each command's help says which); 2 bad input."""
    if ctx.invoked_subcommand in CHECKOUT_COMMANDS:
        require_checkout(f"repro {ctx.invoked_subcommand}")


app.add_typer(matrix_commands.app, name="matrix")
app.add_typer(images_commands.app, name="images")
app.add_typer(compose_commands.app, name="compose")
app.command("doctor")(doctor_commands.doctor)
app.add_typer(models_commands.app, name="models")
app.command("cleanup")(cleanup_commands.cleanup)
app.command("check")(check_commands.check)
app.add_typer(paper_commands.app, name="paper")
app.add_typer(results_commands.app, name="results")
app.add_typer(scale_commands.app, name="scale")
app.add_typer(suites_commands.app, name="suites")
app.add_typer(external_commands.app, name="external")
app.add_typer(export_commands.app, name="export")
app.command("verify")(verify_commands.verify)
app.command("rerun")(rerun_commands.rerun)
app.add_typer(claims_commands.app, name="claims")
app.command("compare")(compare_commands.compare_command)
app.command("sign")(sign_commands.sign)
