"""Unpacking a tar archive someone else made (a suite's source, a published bundle), defensively.

Only regular files and folders are unpacked: a symbolic or hard link, a device, a FIFO is refused,
and so is a name that is absolute or climbs out with `..`. The member count, each member's size
and the total size are bounded, and each header is checked as it is read, before the data behind
it is decompressed, so a hostile archive stops at its first offending member. A truncated or
corrupt archive (gzip or tar) is one line. Extraction goes through tarfile's `data` filter as a
second line of defence.
"""

from __future__ import annotations

import gzip
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from repro.core.errors import ReproError


class ArchiveLimits(BaseModel):
    files: int
    total_bytes: int
    member_bytes: int


def checked_members(
    tar: tarfile.TarFile, name: str, limits: ArchiveLimits, error: type[ReproError] = ReproError
) -> list[tarfile.TarInfo]:
    """Every member of an open archive, each refused as soon as its header is read."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        members.append(member)
        total += member.size
        problem = member_problem(member, limits) or bound_problem(len(members), total, limits)
        if problem:
            raise error(f"{name}: {problem}")
    return members


def member_problem(member: tarfile.TarInfo, limits: ArchiveLimits) -> str | None:
    """Why one member may not be unpacked (None when it may)."""
    shown = repr(member.name)[1:-1][:200]
    if not (member.isfile() or member.isdir()):
        return f"{shown} is not a regular file or folder (links are refused)"
    parts = PurePosixPath(member.name).parts
    if member.name.startswith("/") or ".." in parts or "\\" in member.name or "\0" in member.name:
        return f"{shown} leaves the archive"
    if member.size > limits.member_bytes:
        return f"{shown} is {member.size} bytes (at most {limits.member_bytes} per file)"
    return None


def bound_problem(count: int, total: int, limits: ArchiveLimits) -> str | None:
    if count > limits.files:
        return f"more than {limits.files} entries"
    if total > limits.total_bytes:
        return f"more than {limits.total_bytes // 1024**2} MB unpacked"
    return None


def extract_checked(
    archive: Path, target: Path, limits: ArchiveLimits, error: type[ReproError] = ReproError
) -> list[str]:
    """Extract `archive` into the folder `target` after every member passed; returns the member
    names. A truncated or corrupt archive raises `error` in one line; the caller owns `target`
    (and removes it when this raises)."""
    try:
        whole_stream(archive, limits)
        with tarfile.open(archive) as tar:
            members = checked_members(tar, archive.name, limits, error)
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as cause:  # gzip.BadGzipFile is an OSError
        raise error(f"{archive.name}: cannot unpack ({_reason(cause)})") from None
    return [m.name for m in members]


def whole_stream(archive: Path, limits: ArchiveLimits) -> None:
    """A gzip archive read to its end first, its CRC and length checked (tarfile stops quietly at
    a corrupt block after the first member), within the bound on what it may unpack to."""
    with archive.open("rb") as raw:
        if raw.read(2) != b"\x1f\x8b":
            return
    # the members, their headers and padding, the end records
    bound = limits.total_bytes + 1024 * (limits.files + 2) + 20480
    seen = 0
    with gzip.open(archive, "rb") as stream:
        while block := stream.read(1024**2):
            seen += len(block)
            if seen > bound:
                raise OSError(f"more than {limits.total_bytes // 1024**2} MB unpacked")


def _reason(cause: BaseException) -> str:
    text = " ".join(str(cause).split()) or type(cause).__name__
    if isinstance(cause, EOFError):
        return f"truncated: {text}"
    return text[:200]


PACKED_MTIME = 1_767_225_600  # 2026-01-01T00:00Z: every member's time in a packed bundle (scripts/publish's too)


def pack_targz(folder: Path, out: Path) -> None:
    """`folder` as a gzip tar archive under its own name, the same bytes for the same files on any
    host: sorted names, one fixed time, owner 0, modes 0644 and 0755, gzip time 0. Links are refused."""
    entries = [folder, *sorted(folder.rglob("*"))]
    odd = [p for p in entries if p.is_symlink() or not (p.is_file() or p.is_dir())]
    if odd:
        raise ReproError(f"{odd[0].name}: not a regular file or folder; not packed")
    partial = out.with_name(f".{out.name}.partial")
    with partial.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as tar:
            add_tree(tar, folder, entries[1:], PACKED_MTIME, "root")
    partial.replace(out)


def add_tree(tar: tarfile.TarFile, folder: Path, entries: list[Path], mtime: int, owner: str) -> None:
    """`folder` and its `entries` (sorted) into an open archive under the folder's name, each with
    one time, owner 0 named `owner`, and modes 0755 and 0644: the same bytes on any host."""
    for path in [folder, *entries]:
        info = tar.gettarinfo(str(path), arcname=Path(folder.name, path.relative_to(folder)).as_posix())
        info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, owner, owner
        info.mode = 0o755 if path.is_dir() else 0o644
        if path.is_file():
            with path.open("rb") as handle:
                tar.addfile(info, handle)
        else:
            tar.addfile(info)
