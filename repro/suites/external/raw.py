"""An external cell's raw outputs and what names them: each file a worker wrote becomes
`raw.<path>` in the cell (`raw.w<k>.<path>` with several workers), hashed in cell.json and the
manifest and listed in raw-index.json; and where a bundle keeps the suite's wheel and lock."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from harness.contracts import ScenarioResult, TranscriptLine
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.spec.matrix import ExternalSuite, Suite

RAW_PREFIX = "raw."  # a cell's raw outputs: raw.<path with / as __> (cell files are flat)


RAW_INDEX = "raw-index.json"


WHEEL_DIR = "wheel"  # suites/<suite-id>/wheel/<the wheel file> in a bundle


LOCK_COPY = "requirements.txt"  # suites/<suite-id>/requirements.txt


def external_of(suite: Suite) -> ExternalSuite:
    """The pin of an external suite (this kind runs no other: BadInput for one that names none)."""
    if suite.external is None:
        raise BadInput(f"suite {suite.id} names no external harness")
    return suite.external


class RawFile(BaseModel):
    """One raw output file, kept byte for byte: its name in the cell, where the harness wrote it
    (relative to its output folder, per worker), its sha256 and size."""

    name: str
    path: str
    worker: int = 1
    sha256: str
    bytes: int
    # False: a copy of one of the suite's files (the adapter's input_copy), listed, not kept: its
    # bytes are the suite file's, resolved as the suite's are (absent in older bundles: kept)
    kept: bool = True


class RawIndex(BaseModel):
    """raw-index.json: the adapter, the wheel, and every raw file of the cell."""

    harness: str
    wheel: str
    wheel_sha256: str
    workers: int
    files: list[RawFile]


class Normalised(BaseModel):
    """An external run as our records: one ScenarioResult and one transcript per task, suite order."""

    results: list[ScenarioResult]
    transcripts: list[TranscriptLine]


def pin_inputs(wheel_sha256: str, lock_sha256: str) -> list[str]:
    """What a selection's sha256 covers beside the task files: the wheel's and the lock's sha256."""
    return [f"wheel\0{wheel_sha256}", f"requirements\0{lock_sha256}"]


def raw_name(path: str, worker: int, workers: int) -> str:
    """A raw file's flat name in the cell: raw.[w<k>.]<path with / as __>."""
    prefix = f"{RAW_PREFIX}w{worker}." if workers > 1 else RAW_PREFIX
    return prefix + path.replace("/", "__")


def walk_raw(out_dir: Path, limit: int, harness: str) -> list[str]:
    """Every regular file a worker wrote under its output folder, relative and sorted (links are
    never followed; SQLite's journal side files are not outputs); BadInput past `limit` files."""
    found: list[str] = []
    for folder, dirs, names in os.walk(out_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(Path(folder) / d))
        found += [
            (Path(folder) / n).relative_to(out_dir).as_posix()
            for n in names
            if (Path(folder) / n).is_file() and not (Path(folder) / n).is_symlink()
        ]
        if len(found) > limit:
            raise BadInput(f"{harness} wrote more than {limit} files")
    return sorted(p for p in found if not p.endswith(("-journal", "-wal", "-shm")))


def worker_files(raw: dict[str, bytes], index: RawIndex) -> dict[int, dict[str, bytes]]:
    """Raw bytes by worker, then by the path the worker wrote them at."""
    workers: dict[int, dict[str, bytes]] = {number: {} for number in range(1, index.workers + 1)}
    for entry in index.files:
        if entry.name not in raw or sha256_bytes(raw[entry.name]) != entry.sha256:
            raise BadInput(f"raw file {entry.name} is missing or is not the file raw-index.json names")
        workers.setdefault(entry.worker, {})[entry.path] = raw[entry.name]
    return workers


MAX_TREE_FILES = 5000


def tree_files(folder: Path) -> dict[str, Path]:
    """Each regular file under `folder` by its relative path, sorted; links and Python's byte-code
    caches (`__pycache__`, written by whoever imported the code) are not among them."""
    found = {
        p.relative_to(folder).as_posix(): p
        for p in (folder.rglob("*") if folder.is_dir() else [])
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.relative_to(folder).parts
    }
    if len(found) > MAX_TREE_FILES:
        raise BadInput(f"{folder.name}: {len(found)} files, more than a suite's folder holds ({MAX_TREE_FILES})")
    return dict(sorted(found.items()))


def tree_lines(folder: Path, label: str) -> list[str]:
    """`<label>/<relative path>\\0<sha256>` per file of `tree_files(folder)`."""
    return [f"{label}/{name}\0{sha256_bytes(path.read_bytes())}" for name, path in tree_files(folder).items()]


def wheel_folder(suite: Suite, wheel_root: Path) -> Path:
    """The suite's `path` in its unpacked wheel, which must be a folder inside it."""
    folder = (wheel_root / suite.path).resolve()
    if not folder.is_relative_to(wheel_root.resolve()) or not folder.is_dir():
        raise BadInput(f"suite {suite.id}: {suite.path} is not a folder of the wheel")
    return folder
