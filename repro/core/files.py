"""File helpers written once: sha256 of bytes and files, bounded reads of regular files, atomic
writes, scratch folders, short errors,
and the most bytes read of each kind of file (every bounded read names one of these).

The one bounded reader of repro is `read_regular` (bytes; `open_regular` for a stream): a regular
file only, a link refused unless the caller asks to follow it, a file over the limit refused in
one line, and so is a file that grows past the limit while it is read (never cut short). Text,
JSON, JSON lines and pydantic models are read through it by repro.core.yamlsource
(`decode_text`, `read_json_bounded`, `read_jsonl_bounded`, `read_model_bounded`). The one file
digest is `sha256_file`. (The harness keeps its own reader, harness.io.inputs, because it
never imports repro.)"""

from __future__ import annotations

import hashlib
import os
import shutil
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

# one JSON document: run.json, cell.json, MERGED.json, raw-index.json, results.json, a scenario or fixture file
MAX_JSON_BYTES = 16 * 1024**2
# a cell's scenarios.jsonl or transcripts.jsonl (the harness's own bound: harness.io.inputs.MAX_RECORDS_BYTES)
MAX_JSONL_BYTES = 256 * 1024**2
# one line of those: one scenario's record (a real 50-step transcript is under 1 MB;
# harness.regrade.files.MAX_LINE_CHARS)
MAX_RECORD_LINE_BYTES = 16 * 1024**2
MAX_LOG_BYTES = 64 * 1024**2  # a cell's engine.log
MAX_RAW_BYTES = 64 * 1024**2  # one raw output file of an external harness, or its suite's lock file
MAX_MANIFEST_BYTES = 64 * 1024**2  # MANIFEST.sha256
MAX_ALLOWED_SIGNERS_BYTES = 1024**2  # an ssh allowed-signers file
# an external input a bundle carries (inputs/<sha256>.<ext>: the Tholos runner's archive is 31 kB)
MAX_CARRIED_BYTES = 4 * 1024**2
# a GGUF file `repro models describe` hashes (in chunks; its header has the reader's own bounds)
MAX_GGUF_BYTES = 1024**4


def regular_file(path: Path, limit: int, *, follow_links: bool = False) -> os.stat_result:
    """The status of `path` when it is a regular file of at most `limit` bytes (a link refused
    unless `follow_links`); anything else is one BadInput line."""
    try:
        info = path.stat() if follow_links else path.lstat()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
    if stat.S_ISLNK(info.st_mode):
        raise BadInput(f"{path}: not a regular file (a link: links are not followed)")
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{path}: a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: not a regular file")
    if info.st_size > limit:
        raise BadInput(f"{path}: {info.st_size} bytes, over the limit of {limit} bytes")
    return info


def open_regular(path: Path, limit: int, *, follow_links: bool = False) -> BinaryIO:
    """A regular file of at most `limit` bytes, opened for reading; a link (unless `follow_links`)
    or anything else is refused, and so is a file swapped for another kind between look and open."""
    regular_file(path, limit, follow_links=follow_links)
    try:
        handle = os.fdopen(os.open(path, os.O_RDONLY | (0 if follow_links else os.O_NOFOLLOW) | os.O_NONBLOCK), "rb")
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise BadInput(f"{path}: not a regular file")
    return handle


def read_regular(path: Path, limit: int, *, follow_links: bool = False) -> bytes:
    """A regular file's bytes, at most `limit` of them; a link (unless `follow_links`) or anything
    else is refused, and so is a file that grew past the limit while it was read."""
    path = Path(path)
    with open_regular(path, limit, follow_links=follow_links) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise BadInput(f"{path}: grew while read, over the limit of {limit} bytes")
    return data


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    """The sha256 of a file, read in chunks (a GGUF can be gigabytes); `progress` gets each chunk's size."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(CHUNK):
                digest.update(block)
                if progress:
                    progress(len(block))
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror or error})") from None
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


def link_or_copy(source: Path, target: Path) -> None:
    """`source` at `target` (its folders made): a hard link where the file system allows, else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
