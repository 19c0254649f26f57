"""The bundle to rerun: a run folder as given, or a `.tar.gz` unpacked safely under `--out`.

An archive is untrusted: it is unpacked by `repro.core.archives` (regular files and folders
only; no link, device, FIFO, absolute or `..` name; bounded member count, member size and total
size; a truncated or corrupt archive in one line) into a fresh hidden folder under `--out`, and
renamed into place only when every member unpacked; a refused archive leaves nothing behind. It
must hold exactly one run folder (a `run.json` beside `matrix.yaml`) or one merged folder
(`MERGED.json` beside the shard runs `repro results merge` joined). A merged bundle is rerun one
shard run at a time: `shard_run` picks the one that holds the `--only` cells.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.merge import merge_problems
from repro.bundle.layout.names import MERGE_RECORD
from repro.bundle.layout.reader import BundleReader
from repro.core.archives import ArchiveLimits, extract_checked
from repro.core.errors import BadInput
from repro.core.files import MAX_JSONL_BYTES
from repro.core.terminal import shown

BUNDLE_LIMITS = ArchiveLimits(files=20_000, total_bytes=2 * 1024**3, member_bytes=MAX_JSONL_BYTES)
MAX_ARCHIVE_BYTES = 1024**3  # the compressed archive itself
UNPACKED = "bundle"  # OUT/bundle/<run id>/: the unpacked bundle, beside the rerun's own results


def bundle_folder(given: Path, out: Path) -> Path:
    """The run or merged folder to rerun: `given` itself when it is one, else its archive unpacked
    into OUT/bundle/ (once: an archive already unpacked there is reused when its names match)."""
    if given.is_symlink():
        raise BadInput(f"{shown(given)}: a link; give the bundle's folder or archive itself")
    if given.is_dir():
        return given if is_merged(given) else require_run_folder(given)
    if not given.is_file():
        raise BadInput(f"{shown(given)}: no such bundle (a run folder, or its .tar.gz)")
    if given.stat().st_size > MAX_ARCHIVE_BYTES:
        raise BadInput(
            f"{shown(given)}: more than {MAX_ARCHIVE_BYTES // 1024**2} MB; not a bundle this command unpacks"
        )
    return unpack_bundle(given, out / UNPACKED)


def require_run_folder(folder: Path) -> Path:
    """A bundle's run folder: run.json and matrix.yaml, both regular files."""
    missing = missing_file(folder)
    if missing:
        raise BadInput(
            f"{shown(folder)}: not a bundle (no {missing}); give a run folder written by repro matrix run, "
            "or its .tar.gz"
        )
    return folder


def is_merged(folder: Path) -> bool:
    """A merged folder: MERGED.json, a regular file, at its top."""
    record = folder / MERGE_RECORD
    return record.is_file() and not record.is_symlink()


def shard_run(folder: Path, only: list[str]) -> Path:
    """The run folder to rerun: `folder` itself, or, for a merged folder that is the whole split its
    MERGED.json records, its one shard run that holds every `--only` cell."""
    if not is_merged(folder):
        return folder
    problems = merge_problems(folder)
    if problems:
        raise BadInput(f"{shown(folder.name)}: not the merged folder its {MERGE_RECORD} records ({shown(problems[0])})")
    held = {run: set(BundleReader(run).cell_ids()) for run in find_runs(folder)}
    holding = [run for run, cells in held.items() if only and set(only) <= cells]
    if len(holding) != 1:
        listed = "; ".join(f"{run.name}: {', '.join(sorted(cells))}" for run, cells in held.items())
        raise BadInput(
            f"{shown(folder.name)}: a merged bundle of {len(held)} shard runs is rerun one shard at a time; "
            f"name its cells with --only ({shown(listed)[:600]})"
        )
    return holding[0]


def missing_file(folder: Path) -> str | None:
    """The first of run.json and matrix.yaml that is not a regular file in `folder`."""
    return next(
        (name for name in ("run.json", "matrix.yaml") if (folder / name).is_symlink() or not (folder / name).is_file()),
        None,
    )


def unpack_bundle(archive: Path, into: Path) -> Path:
    """Unpack into a hidden work folder under `into`, check it holds one run folder, move it in."""
    into.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=into))
    try:
        names = extract_checked(archive, work, BUNDLE_LIMITS, BadInput)
        tops = sorted({PurePosixPath(name).parts[0] for name in names if PurePosixPath(name).parts})
        if len(tops) != 1 or (missing_file(work / tops[0]) and not is_merged(work / tops[0])):
            raise BadInput(
                f"{shown(archive)}: not a bundle archive (one run folder with run.json and matrix.yaml, or one "
                f"merged folder with MERGED.json, at its top; found {len(tops)} entries)"
            )
        run_dir = work / tops[0]
        target = into / tops[0]
        if target.exists():
            shutil.rmtree(target)  # an earlier unpacking of it: this one is fresh and complete
        run_dir.rename(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):
            into.rmdir()  # only when empty: a refused archive leaves no folder behind
