"""`repro cleanup`."""

from __future__ import annotations

import typer
from rich.console import Console

from repro.core.errors import ReproError


def cleanup(
    run_id: str = typer.Option(
        None, "--run-id", help="Only the containers of this run (default: every repro container)."
    ),
) -> None:
    """Remove leftover containers by their `repro.run` label and report what was removed.

    Exit codes: 0 nothing is left; 1 a container could not be removed; 2 bad input."""
    from repro.containers.cleanup import cleanup as remove_leftovers

    console = Console()
    report = remove_leftovers(run_id)
    scope = f"run {run_id}" if run_id else "any run"
    if not report:
        console.print(f"no repro containers of {scope}")
        return
    for entry in report:
        state = "[green]removed[/]" if entry.removed else "[red]NOT removed[/]"
        console.print(
            f"{state} {entry.name} ({entry.id}, run {entry.run}, role {entry.role or '-'}, "
            f"cell {entry.cell or '-'}, was {entry.status})",
            soft_wrap=True,
        )
    left = [e.name for e in report if not e.removed]
    if left:
        raise ReproError(f"{len(left)} container(s) could not be removed: {', '.join(left)}")
    console.print(f"{len(report)} container(s) removed")
