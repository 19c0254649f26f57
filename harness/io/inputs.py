"""The harness's input and output files: bounded before a byte is read, regular files only.

An input is a regular file (a link to one is followed): a FIFO would block and a device would
never end, so both are refused before they are opened for reading. Each kind of file has one size
bound, checked before reading, so a sparse file of a gigabyte is refused rather than read whole.
JSON read from files has no integer thousands of digits long and no deep nesting (both bounds
below). An output is checked before the work starts: a device, FIFO, folder or link in its place
is refused, since an atomic rename would replace it.

The harness never imports repro, so this is its own copy of repro's one bounded reader
(``repro.core.files.read_regular``) and of the bounds repro reads bundles with, the same values.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import IO, Any

from harness.io.strict_json import StrictJSONError, loads_strict

MAX_SCENARIO_BYTES = 1024**2  # one scenario file; the project's largest is about 4 KB
MAX_RECORDS_BYTES = 256 * 1024**2  # a cell's scenarios.jsonl or transcripts.jsonl, as repro's bundle bound
MAX_JSON_DEPTH = 64  # nesting of a JSON file, as repro's
MAX_INT_DIGITS = 64  # digits of an integer in a JSON file, as repro's


class InputError(Exception):
    """An input or output file that cannot be used; the message is one line naming it."""


# ---------------------------------------------------------------------------- reading


def open_regular(path: Path, limit: int) -> IO[bytes]:
    """`path` opened for reading once it is a regular file of at most `limit` bytes.

    A device or FIFO is refused before it is opened; the file is then opened without blocking and
    checked again on the open descriptor, so a FIFO swapped in after the look is still refused
    rather than waited on."""
    try:
        _require_regular(path, os.stat(path), limit)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        _require_regular(path, os.fstat(fd), limit)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def open_text(path: Path, limit: int) -> IO[str]:
    """`open_regular` as UTF-8 text; undecodable bytes are replaced (the reader judges the lines)."""
    return io.TextIOWrapper(open_regular(path, limit), encoding="utf-8", errors="replace")


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (one more read shows growth)."""
    with open_regular(path, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise InputError(f"{path}: larger than the limit of {limit} bytes")
    return data


def _require_regular(path: Path, info: os.stat_result, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path}: a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{path}: not a regular file")
    if info.st_size > limit:
        raise InputError(f"{path}: {info.st_size} bytes, larger than the limit of {limit} bytes")


def read_text(path: Path, limit: int) -> str:
    """A regular file of at most `limit` bytes as UTF-8 text."""
    data = read_regular(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


# ---------------------------------------------------------------------------- JSON


def parse_json(path: Path, text: str) -> Any:
    """The text of the JSON file `path` (already read within its bound), within the bounds above."""
    try:
        return loads_strict(text, max_int_digits=MAX_INT_DIGITS, max_depth=MAX_JSON_DEPTH)
    except StrictJSONError as error:
        raise InputError(f"{path}: invalid JSON: {error}") from None


# ---------------------------------------------------------------------------- writing


def require_output_file(path: Path) -> Path:
    """`path` as a regular file to (re)write, checked before any work: a device, FIFO, folder or
    link in its place is refused, and its folder must exist and be writable."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a folder" if path.is_dir() else "a link" if path.is_symlink() else "not a regular file"
        raise InputError(f"{path}: {kind}, not an output file")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{path}: the folder {folder} is not writable")
    return path
