"""`repro images bootstrap | build | list | lock`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from repro.commands.steps import build_images, docker_client, images_needed
from repro.commands.vocabulary import PROFILE, Typer, matrix_argument
from repro.core.errors import BadInput, ReproError
from repro.store.bootstrap import DEFAULT_MIRROR, DEFAULT_SUITE, base_reference, bootstrap
from repro.store.images import (
    Blocked,
    BuildLog,
    BuildPlan,
    DigestPin,
    build_log_path,
    lock_harness_requirements,
    resolve_digest,
    resolve_plan,
)

if TYPE_CHECKING:
    from repro.containers.client import DockerClient

app = Typer(help="Bootstrap the offline base, build and list the images a matrix needs.", no_args_is_help=True)
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


@app.command("bootstrap")
def bootstrap_command(
    suite: str = typer.Option(DEFAULT_SUITE, "--suite", help="Debian suite of the base."),
    mirror: str = typer.Option(DEFAULT_MIRROR, "--mirror", help="Debian mirror (plain http works)."),
    force: bool = typer.Option(
        False, "--force", help="Make the base again even if it exists (changes every content key)."
    ),
) -> None:
    """Make the offline base image repro/base:SUITE with debootstrap (once; idempotent).

    Exit codes: 0 the base exists; 1 debootstrap or Docker failed; 2 bad input."""
    client = docker_client()
    started = time.monotonic()
    image_id, created = bootstrap(
        client, suite=suite, mirror=mirror, force=force, log=lambda line: err.print(f"[dim]{escape(line)}[/]")
    )
    if created:
        err.print(f"made {base_reference(suite)} in {time.monotonic() - started:.0f} s")
    else:
        err.print(f"{base_reference(suite)} exists (use --force to make it again)")
    typer.echo(image_id)


@app.command("build")
def build_command(
    matrix: Path = matrix_argument(),
    profile: str = PROFILE,
    verbose: bool = typer.Option(
        False, "--log/--no-log", help="Stream build log lines (dimmed); by default each log goes to CACHE/build-logs/."
    ),
    from_bundle: Path | None = typer.Option(
        None,
        "--from-bundle",
        metavar="RUN",
        help="Instead of a matrix's images: the external suites' images a bundle's cells ran in, from the bundle's "
        "own pins at its commit (what `repro check` needs to re-score them).",
    ),
) -> None:
    """Build the harness image and the engine images a matrix needs (skips what is up to date).

    The profile's engine_variant picks the engine images.

    Exit codes: 0 every image is built or up to date; 1 a build failed or a pinned image is missing; 2 bad input."""
    stream = (lambda line: console.print(f"[dim]{escape(line)}[/]", soft_wrap=True)) if verbose else None
    if from_bundle is not None:
        build_bundle_images(from_bundle, stream)
        return
    build_images(matrix, profile, stream)


def build_bundle_images(given: Path, stream: Callable[[str], None] | None) -> None:
    """`--from-bundle`: each run's external suite images, from its own pins (one line each)."""
    from repro.bundle.layout.discovery import find_runs
    from repro.suites.external.rebuild import bundle_images

    if given.is_symlink() or not given.is_dir():
        raise BadInput(f"{given}: not a bundle folder (a run folder or a results folder; unpack a .tar.gz first)")
    runs = find_runs(given)
    client = docker_client()
    for run_dir in runs:
        started = time.monotonic()
        with BuildLog(build_log_path(f"bundle-{run_dir.name}"), stream) as log:
            built = bundle_images(run_dir, client, log)
        for suite_id, ref in built:
            console.print(f"[green]ready[/]      {ref.reference} ({ref.id[7:19]}) for suite {escape(suite_id)}")
        what = f"{len(built)} suite image(s) ready" if built else "no external suite ran, nothing to build"
        console.print(f"{escape(run_dir.name)}: {what} in {time.monotonic() - started:.0f} s", soft_wrap=True)


@app.command("list")
def list_command(
    matrix: Path = matrix_argument(),
    profile: str = PROFILE,
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """The images a matrix needs on a profile: present or missing, with keys and ids.

    Exit codes: 0 listed (missing images too); 1 Docker failed; 2 bad input."""
    client, variant, needs = images_needed(matrix, profile, collect=True)
    rows = [_row(need, client) for need in needs]
    if as_json:
        typer.echo(
            json.dumps({"matrix": str(matrix), "profile": profile, "variant": variant, "images": rows}, indent=2)
        )
        return
    console.print(f"[bold]images for {escape(str(matrix))}[/] on profile [bold]{profile}[/] ({variant})")
    for row in rows:
        status = "[green]present[/]" if row["present"] else "[red]missing[/]"
        if row["pinned_by"] is None:
            console.print(f"[red]blocked[/]  {row['name']}: {escape(row['reason'])}", soft_wrap=True)
            continue
        pin = f"key {row['key']}" if row["pinned_by"] == "content-key" else "pinned by digest"
        console.print(f"{status}  {row['reference']}  {pin}  id {row['id'] or '-'}", soft_wrap=True)
    missing = sum(1 for row in rows if not row["present"])
    if missing:
        console.print(
            f"{missing} missing; run: repro images build {escape(str(matrix))} --profile {profile}", soft_wrap=True
        )


def _row(need: BuildPlan | DigestPin | Blocked, client: DockerClient) -> dict[str, Any]:
    if isinstance(need, Blocked):
        return {
            "name": need.name,
            "kind": None,
            "reference": None,
            "pinned_by": None,
            "key": None,
            "present": False,
            "id": None,
            "reason": need.reason,
        }
    if isinstance(need, DigestPin):
        try:
            ref = resolve_digest(need, client)
        except ReproError:
            ref = None
        return {
            "name": need.name,
            "kind": "engine",
            "reference": need.reference,
            "pinned_by": "digest",
            "key": None,
            "present": ref is not None,
            "id": ref.id if ref else None,
        }
    ref = resolve_plan(need, client)
    return {
        "name": need.name,
        "kind": need.kind,
        "reference": need.tag,
        "pinned_by": "content-key",
        "key": need.key,
        "present": ref is not None,
        "id": ref.id if ref else None,
    }


@app.command("lock")
def lock_command() -> None:
    """Resolve pyproject's base dependencies and rewrite images/harness/requirements.txt with hashes.

    Exit codes: 0 rewritten; 1 the resolution failed; 2 bad input."""
    lock_harness_requirements(log=lambda line: err.print(line))
