"""Other projects' files a bundle references (repro.bundle.records.InputReference), found by
sha256 alone: in the content-addressed cache `<cache>/inputs/sha256/<hex>`, else in a local mirror
(`REPRO_SOURCE_MIRROR=DIR[:DIR...]`, or a command's `--mirror`), whatever the file is called or
where it sits in the mirror's folders. Nothing here uses the network: `repro suites fetch` fetches,
this only finds. Bytes that do not hash to the reference are never admitted.

A mirror is a local folder (a copy of a dataset as its authors publish it, a folder of wheels):
its regular files of at most MAX_INPUT_BYTES are hashed once per process (at most
MAX_MIRROR_FILES of them per mirror, links never followed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from repro.core.config import cache_dir
from repro.core.files import sha256_file
from repro.store.sources import MAX_MIRROR_FILES, mirror_dirs

MAX_INPUT_BYTES = 64 * 1024**2  # one referenced file (a scenario file, a wheel, a harness's archive)
HEX = frozenset("0123456789abcdef")


def inputs_dir() -> Path:
    return cache_dir() / "inputs" / "sha256"


def cached_input(sha256: str) -> Path | None:
    """The cache's copy of the file with this sha256 (admitted verified), or None."""
    if len(sha256) != 64 or not set(sha256) <= HEX:  # a name in the cache, never a path
        return None
    path = inputs_dir() / sha256
    return path if path.is_file() and not path.is_symlink() else None


def admit_input(path: Path, sha256: str) -> Path | None:
    """A copy of `path` in the cache when its bytes hash to `sha256`; None when they do not."""
    if len(sha256) != 64 or not set(sha256) <= HEX:
        return None
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_INPUT_BYTES:
        return None
    target = inputs_dir() / sha256
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".admit-", dir=target.parent)
    os.close(handle)
    try:
        shutil.copyfile(path, partial)
        if sha256_file(Path(partial)) != sha256:
            return None
        os.replace(partial, target)
    finally:
        Path(partial).unlink(missing_ok=True)
    return target


def find_input(sha256: str) -> Path | None:
    """The file with this sha256: from the cache, else from a mirror (admitted into the cache)."""
    found = cached_input(sha256)
    if found is not None:
        return found
    for mirror in mirror_dirs():
        candidate = mirror_index(str(mirror.resolve())).get(sha256)
        if candidate is not None:
            admitted = admit_input(candidate, sha256)
            if admitted is not None:
                return admitted
    return None


@lru_cache(maxsize=16)
def mirror_index(mirror: str) -> dict[str, Path]:
    """sha256 -> path of the mirror's regular files of at most MAX_INPUT_BYTES (the first of equal ones)."""
    index: dict[str, Path] = {}
    seen = 0
    for folder, dirs, names in os.walk(mirror, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_INPUT_BYTES:
                continue
            index.setdefault(sha256_file(path), path)
            seen += 1
            if seen >= MAX_MIRROR_FILES:
                return index
    return index
