"""`repro doctor` and `repro doctor MATRIX [--profile P]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.commands.vocabulary import PROFILE, matrix_argument
from repro.doctor.machine import Finding, run_checks

COLOURS = {"OK": "green", "WARN": "yellow", "FAIL": "red"}


def doctor(
    matrix: Path = matrix_argument(
        None,
        help="A matrix: also check its images and models, boot each engine sealed, "
        "and make one tool-call round trip per protocol.",
    ),
    profile: str = PROFILE,
) -> None:
    """Check that this machine can run a matrix: Docker, storage, disk, debootstrap, GPU runtime;
    with MATRIX, the whole pipeline layer by layer (host, images, models, engine, protocol) on the
    profile.

    Exit codes: 0 no check failed (warnings allowed); 1 a check failed; 2 bad input."""
    console = Console()
    if matrix is None:
        failed = [show(console, finding) for finding in run_checks()]
    else:
        from repro.doctor.probe import probe as probe_layers

        failed = [show(console, found.finding, found.layer) for found in probe_layers(matrix, profile)]
    if any(failed):
        raise typer.Exit(1)


def show(console: Console, finding: Finding, layer: str | None = None) -> bool:
    """Print one finding (with its layer when probing); True when it is a FAIL."""
    hint = f"  [dim]hint: {finding.hint}[/]" if finding.hint else ""
    where = f"[bold]{layer:<8}[/] " if layer else ""
    console.print(
        f"[{COLOURS[finding.level]}]{finding.level:<4}[/] {where}{finding.name}: {finding.detail}{hint}", soft_wrap=True
    )
    return finding.level == "FAIL"
