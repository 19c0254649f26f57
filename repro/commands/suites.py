"""`repro suites fetch`."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from repro.commands.steps import fetch_suites
from repro.commands.vocabulary import Typer, matrix_argument
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.store.sources import MIRROR_ENV

app = Typer(
    help="Fetch the pinned external suites of a matrix (suites with a source or an external harness).",
    no_args_is_help=True,
)


@app.command()
def fetch(
    matrix: Path = matrix_argument(help="Matrix file whose suites to fetch (default: the embedded matrix/smoke.yaml)."),
    mirror: list[Path] = typer.Option(
        [],
        "--mirror",
        help=f"A local folder of archives found by sha256 before any download (repeatable; also {MIRROR_ENV}).",
    ),
    from_bundle: Path = typer.Option(
        None,
        "--from-bundle",
        help="A run folder (or merged folder): fetch every input it references, instead of a matrix's suites.",
    ),
) -> None:
    """Fetch, verify (sha256) and unpack every suite with a source or an external harness; suites in
    the project need nothing. With --from-bundle, every input the bundle references (another
    project's scenario files, wheel or harness archive), from where it is pinned, so that `repro
    check` of the bundle can look at it.

    Exit codes: 0 every suite (or reference) is ready; 1 a fetch or its verification failed; 2 bad input."""
    bad = [folder for folder in mirror if not folder.is_dir()]
    if bad:
        raise BadInput(f"--mirror {bad[0]}: not a folder")
    if mirror:
        os.environ[MIRROR_ENV] = os.pathsep.join([*map(str, mirror), *filter(None, [os.environ.get(MIRROR_ENV)])])
    console = Console(highlight=False)  # ids, sources and log lines are input: printed escaped (shown)
    if from_bundle is not None:
        fetch_from_bundle(from_bundle, console)
        return
    fetch_suites(matrix, console)


def fetch_from_bundle(folder: Path, console: Console) -> None:
    """Each reference of each run of a run or merged folder, fetched; exit 1 when any failed."""
    from repro.bundle.layout.discovery import find_runs
    from repro.suites.fetching import fetch_run_references

    if not folder.is_dir() or folder.is_symlink():
        raise BadInput(f"--from-bundle {folder}: not a run folder or a merged folder (unpack a .tar.gz first)")
    failed = done = 0
    for run_dir in find_runs(folder):
        for item in fetch_run_references(run_dir, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True)):
            what = f"{shown(run_dir.name)}: {item.reference.role} of suite {shown(item.reference.suite)}"
            if item.failed is not None:
                console.print(f"[red]FAILED[/] {what}: {shown(item.failed)}", soft_wrap=True)
                failed += 1
            else:
                console.print(f"[green]OK[/]   {what}: {shown(item.said)}", soft_wrap=True)
                done += 1
    console.print(f"{done} referenced input(s) ready, {failed} not fetched")
    if failed:
        raise typer.Exit(1)


@app.command()
def pack(
    folder: Path = typer.Argument(..., help="The folder to pack (its name becomes the archive's top folder)."),
    out: Path = typer.Option(..., "--out", help="The tar archive to write."),
) -> None:
    """Pack a folder as a deterministic tar archive (the same sha256 on any host) and print its sha256,
    to pin a suite published as loose files (`source: {archive: FILE, sha256: ...}`).

    Exit codes: 0 packed; 1 an unexpected error; 2 bad input."""
    from repro.suites.sources import pack_folder

    if not folder.is_dir() or folder.is_symlink():
        raise BadInput(f"{folder}: not a folder")
    if out.exists() and (out.is_symlink() or not out.is_file()):
        raise BadInput(f"--out {out}: not a regular file")
    print(f"{pack_folder(folder, out)}  {out.name}")
