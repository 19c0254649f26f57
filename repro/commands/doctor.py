"""`repro doctor`."""

from __future__ import annotations

import typer
from rich.console import Console

from repro.doctor import run_checks

COLOURS = {"OK": "green", "WARN": "yellow", "FAIL": "red"}


def doctor() -> None:
    """Check that this machine can run a matrix: Docker, storage, disk, debootstrap, GPU runtime."""
    console = Console()
    findings = run_checks()
    for finding in findings:
        hint = f"  [dim]hint: {finding.hint}[/]" if finding.hint else ""
        console.print(f"[{COLOURS[finding.level]}]{finding.level:<4}[/] {finding.name}: {finding.detail}{hint}", soft_wrap=True)
    if any(f.level == "FAIL" for f in findings):
        raise typer.Exit(1)
