"""File helpers written once: sha256 of bytes and files, bounded reads of regular files, atomic
writes, scratch folders, short errors,
and the most bytes read of each kind of file (every bounded read names one of these)."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from repro.core.config import cache_dir
from repro.core.errors import BadInput

GIB = 1024**3
CHUNK = 1024 * 1024
FILE_MODE = 0o644
DIR_MODE = 0o755

MAX_JSON_BYTES = 16 * 1024**2  # one JSON document: run.json, cell.json, MERGED.json, raw-index.json, results.json, a scenario or fixture file
MAX_JSONL_BYTES = 256 * 1024**2  # a cell's scenarios.jsonl or transcripts.jsonl (the harness's own bound: harness.io.inputs.MAX_RECORDS_BYTES)
MAX_RECORD_LINE_BYTES = 16 * 1024**2  # one line of those: one scenario's record (a real 50-step transcript is under 1 MB; harness.regrade.MAX_LINE_CHARS)
MAX_LOG_BYTES = 64 * 1024**2  # a cell's engine.log
MAX_RAW_BYTES = 64 * 1024**2  # one raw output file of an external harness, or its suite's lock file
MAX_MANIFEST_BYTES = 64 * 1024**2  # MANIFEST.sha256
MAX_ALLOWED_SIGNERS_BYTES = 1024**2  # an ssh allowed-signers file
MAX_GGUF_BYTES = 1024**4  # a GGUF file `repro models describe` hashes (in chunks; its header has the reader's own bounds)


def open_regular(path: Path, limit: int) -> BinaryIO:
    """A regular file of at most `limit` bytes, opened for reading; a link or anything else is refused."""
    try:
        info = path.lstat()
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: not a regular file")
    if info.st_size > limit:
        raise BadInput(f"{path}: {info.st_size} bytes, over the limit of {limit}")
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most `limit` of them; a link or anything else is refused."""
    with open_regular(path, limit) as handle:
        return handle.read(limit + 1)[:limit]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    """The sha256 of a file, read in chunks (a GGUF can be gigabytes); `progress` gets each chunk's size."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
            if progress:
                progress(len(block))
    return digest.hexdigest()


def atomic_write(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Write a file whole or not at all (temporary file in the same folder, fsync, rename), readable by all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def scratch_dir(prefix: str) -> Path:
    """A fresh folder under the cache's tmp/ (same filesystem as the cache, so renames are atomic)."""
    folder = cache_dir() / "tmp"
    folder.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=folder))


def short_error(error: BaseException, limit: int = 300) -> str:
    """The first line of an error's text (or its type name), at most `limit` characters."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:limit]
