"""`repro doctor` and `repro doctor --probe MATRIX --profile P`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.core.errors import BadInput
from repro.doctor.machine import Finding, run_checks

COLOURS = {"OK": "green", "WARN": "yellow", "FAIL": "red"}


def doctor(
    probe: Path = typer.Option(
        None, "--probe", help="A matrix: also check its images and models, boot each engine sealed, and make one tool-call round trip per protocol."
    ),
    profile: str = typer.Option(None, "--profile", help="The profile to probe on (with --probe)."),
) -> None:
    """Check that this machine can run a matrix: Docker, storage, disk, debootstrap, GPU runtime;
    with --probe, the whole pipeline layer by layer (host, images, models, engine, protocol)."""
    console = Console()
    if probe is None:
        failed = [show(console, finding) for finding in run_checks()]
    else:
        if profile is None:
            raise BadInput("--probe needs --profile (e.g. --profile cpu)")
        from repro.doctor.probe import probe as probe_layers

        failed = [show(console, found.finding, found.layer) for found in probe_layers(probe, profile)]
    if any(failed):
        raise typer.Exit(1)


def show(console: Console, finding: Finding, layer: str | None = None) -> bool:
    """Print one finding (with its layer when probing); True when it is a FAIL."""
    hint = f"  [dim]hint: {finding.hint}[/]" if finding.hint else ""
    where = f"[bold]{layer:<8}[/] " if layer else ""
    console.print(f"[{COLOURS[finding.level]}]{finding.level:<4}[/] {where}{finding.name}: {finding.detail}{hint}", soft_wrap=True)
    return finding.level == "FAIL"
