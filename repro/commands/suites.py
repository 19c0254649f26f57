"""`repro suites fetch`."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from repro.commands.vocabulary import Typer, matrix_argument
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.spec.loading import load_matrix
from repro.store.sources import MIRROR_ENV
from repro.suites.registry import kind_of

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
) -> None:
    """Fetch, verify (sha256) and unpack every suite with a source or an external harness; suites in
    the project need nothing.

    Exit codes: 0 every suite is ready; 1 a fetch or its verification failed; 2 bad input."""
    bad = [folder for folder in mirror if not folder.is_dir()]
    if bad:
        raise BadInput(f"--mirror {bad[0]}: not a folder")
    if mirror:
        os.environ[MIRROR_ENV] = os.pathsep.join([*map(str, mirror), *filter(None, [os.environ.get(MIRROR_ENV)])])
    console = Console(highlight=False)  # ids, sources and log lines are input: printed escaped (shown)
    loaded = load_matrix(matrix)
    ready = 0
    for suite in loaded.matrix.suites:
        said = kind_of(suite).fetch(suite, log=lambda line: console.print(f"  {shown(line)}", soft_wrap=True))
        if said is not None:
            console.print(f"[green]OK[/]   {shown(suite.id)}: {shown(said)}", soft_wrap=True)
            ready += 1
    console.print(f"{ready} external suite(s) ready; {len(loaded.matrix.suites) - ready} in the project")


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
