"""Whether a bundle is intact: every entry a regular file or folder (no link, no device, no
dot-entry), each cell's files those its cell.json hashes, and every file the one its manifest lists."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from repro.bundle.layout.loading import load_cell
from repro.bundle.layout.names import ATTESTATION, CELL_FILE, MANIFEST, SIGNATURE, is_partial, is_plain_name
from repro.core.errors import BadInput
from repro.core.files import (
    MAX_MANIFEST_BYTES,
    read_regular,
    sha256_file,
)


def entries(run_dir: Path) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under a bundle (relative posix path, lstat), without following links."""
    for folder, dirs, files in os.walk(run_dir, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            path = Path(folder) / name
            yield path.relative_to(run_dir).as_posix(), path.lstat()


def strange_entries(run_dir: Path) -> list[str]:
    """Entries a bundle must not hold: links, devices, sockets, and dot-entries (partial cells aside)."""
    problems = []
    for relative, info in entries(run_dir):
        parts = relative.split("/")
        if stat.S_ISLNK(info.st_mode):
            problems.append(f"{relative}: a symbolic link")
        elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            problems.append(f"{relative}: not a regular file or folder")
        elif any(part.startswith(".") for part in parts) and not is_partial(parts):
            problems.append(f"{relative}: a hidden entry")
    return problems


def bundle_files(run_dir: Path) -> list[Path]:
    """The regular files of a bundle that the manifest covers: all but the manifest, its signature,
    partial cells, links and other strange entries."""
    files = []
    for relative, info in entries(run_dir):
        parts = relative.split("/")
        if not stat.S_ISREG(info.st_mode) or relative in (MANIFEST, SIGNATURE, ATTESTATION) or is_partial(parts):
            continue
        if any(part.startswith(".") for part in parts):
            continue
        files.append(run_dir / relative)
    return files


def cell_problems(cell_dir: Path) -> list[str]:
    """Why a cell folder is not complete and intact (empty when it is)."""
    if not (cell_dir / CELL_FILE).is_file() or (cell_dir / CELL_FILE).is_symlink():
        return [f"{CELL_FILE} missing"]
    try:
        record = load_cell(cell_dir)
    except BadInput as error:
        return [f"{CELL_FILE} unreadable: {error}"]
    problems = []
    for name, digest in record.files.items():
        path = cell_dir / name
        if not is_plain_name(name) or path.is_symlink() or not path.is_file():
            problems.append(f"{name} missing or not a regular file")
        elif sha256_file(path) != digest:
            problems.append(f"{name} sha256 differs from {CELL_FILE}")
    return problems


def manifest_problems(run_dir: Path) -> list[str]:
    """Files whose sha256 differs from MANIFEST.sha256, files it does not list, and strange entries."""
    manifest = run_dir / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        return ["MANIFEST.sha256 missing (the run did not finish)"]
    listed: dict[str, str] = {}
    for line in read_regular(manifest, MAX_MANIFEST_BYTES).decode("utf-8", errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    problems = list(strange_entries(run_dir))
    present = {p.relative_to(run_dir).as_posix(): p for p in bundle_files(run_dir)}
    for name, digest in listed.items():
        if name not in present:
            problems.append(f"{name}: listed in the manifest but missing")
        elif sha256_file(present[name]) != digest:
            problems.append(f"{name}: sha256 differs from the manifest")
    problems += [f"{name}: not in the manifest" for name in present if name not in listed]
    return problems
