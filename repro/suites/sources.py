"""External suites: scenario files from a pinned archive, never from a folder that can change.

A matrix suite with a `source` (the same pinned kinds as an engine source, repro.store.sources: a PyPI
sdist, a git commit, a local tar archive, each with its sha256) names its scenarios by `path`
inside that archive. `repro suites fetch MATRIX` fetches and verifies the archive, then unpacks
it once into `<cache>/suites/sha256/<hex>/`; a run reads only that unpacked copy (runs never
download). Unpacking is defensive: regular files and folders only (no link, device or FIFO), no
absolute name, no `..`, at most MAX_FILES files and MAX_BYTES bytes.

`pack_folder` (`repro suites pack FOLDER --out FILE.tar`) makes such an archive from a folder
deterministically (sorted names, mtime 0, owner 0, fixed modes, no compression), so anyone who
packs the same files gets the same sha256: that is how a scenario folder published without an
archive (Tholos-Bench's 160 files) is pinned.

`path` may name a folder of `<category>/<id>.json` files, or a JSON Lines file whose rows are
scenarios with some fields given as JSON text (the form a dataset viewer exports, as Tholos-Bench's
`data/test.jsonl`): each row is converted once, beside the file, into the folder form.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from repro.core.archives import ArchiveLimits, add_tree, extract_checked
from repro.core.config import cache_dir
from repro.core.errors import BadInput
from repro.core.files import MAX_JSON_BYTES, atomic_write, sha256_file
from repro.core.yamlsource import read_bounded
from repro.spec.matrix import EngineSource, Suite
from repro.store.sources import Log, fetch_source

MAX_FILES = 20_000
MAX_BYTES = 256 * 1024**2
COMPLETE = ".complete"  # written last: an unpacked folder without it is not used
JSON_TEXT_FIELDS = ("workspace", "trigger", "reference", "expect", "respond", "interfere", "fixtures")


def suites_dir() -> Path:
    return cache_dir() / "suites" / "sha256"


def unpacked(source: EngineSource) -> Path | None:
    folder = suites_dir() / source.sha256
    return folder if (folder / COMPLETE).is_file() else None


def fetch_suite(source: EngineSource, log: Log = lambda line: None) -> Path:
    """The unpacked, verified archive of a suite source, fetching and unpacking it on first use."""
    found = unpacked(source)
    if found is not None:
        return found
    archive = fetch_source(source, log=log)
    target = suites_dir() / source.sha256
    suites_dir().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=suites_dir()))
    try:
        unpack(archive, work)
        (work / COMPLETE).write_text(source.describe() + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"suite source {source.describe()} unpacked in {target}")
    return target


def unpack(archive: Path, target: Path) -> None:
    """Extract a tar archive's regular files and folders into `target`, refusing anything else
    (repro.core.archives)."""
    extract_checked(archive, target, ArchiveLimits(files=MAX_FILES, total_bytes=MAX_BYTES, member_bytes=MAX_BYTES))


def pack_folder(folder: Path, out: Path) -> str:
    """`folder`'s regular files and folders as an uncompressed tar under `<folder name>/`, the same
    bytes for the same files on any host; returns its sha256. Links are refused."""
    folder = folder.resolve()
    entries = sorted(folder.rglob("*"))
    if len(entries) > MAX_FILES:
        raise BadInput(f"{folder.name}: {len(entries)} entries (at most {MAX_FILES})")
    links = [p for p in entries if p.is_symlink() or not (p.is_file() or p.is_dir())]
    if links:
        raise BadInput(f"{links[0]}: not a regular file or folder (links are refused)")
    work = out.with_name(f".{out.name}.partial")
    with tarfile.open(work, "w", format=tarfile.PAX_FORMAT) as tar:
        add_tree(tar, folder, entries, 0, "")
    os.replace(work, out)
    return sha256_file(out)


def scenario_folder(suite: Suite) -> Path:
    """Where a suite with a source keeps its scenarios (BadInput when not fetched yet)."""
    assert suite.source is not None
    root = unpacked(suite.source)
    if root is None:
        raise BadInput(
            f"suite {suite.id}: its source {suite.source.describe()} is not fetched; run: repro suites fetch MATRIX"
        )
    path = (root / suite.path).resolve()
    if not path.is_relative_to(root.resolve()) or not path.exists():
        raise BadInput(f"suite {suite.id}: {suite.path} is not in its source {suite.source.describe()}")
    return jsonl_folder(path) if path.suffix == ".jsonl" else path


def jsonl_folder(path: Path) -> Path:
    """The folder form of a JSON Lines suite, converted once beside it."""
    folder = path.with_name(f"{path.stem}-scenarios")
    if (folder / COMPLETE).is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    for number, line in enumerate(read_bounded(path, MAX_BYTES).decode("utf-8", errors="strict").splitlines(), start=1):
        if line.strip():
            row = scenario_row(path, number, line)
            atomic_write(
                folder / safe_part(row["category"]) / f"{safe_part(row['id'])}.json", json.dumps(row, indent=1).encode()
            )
    atomic_write(folder / COMPLETE, b"")
    return folder


def scenario_row(path: Path, number: int, line: str) -> dict:
    """One row as a scenario: fields given as JSON text are parsed."""
    if len(line) > MAX_JSON_BYTES:
        raise BadInput(f"{path}:{number} a row over {MAX_JSON_BYTES} bytes")
    try:
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("category"), str):
            raise ValueError("a row needs string id and category")
        for field in JSON_TEXT_FIELDS:
            if isinstance(row.get(field), str) and row[field].strip()[:1] in ("{", "["):
                row[field] = json.loads(row[field])
    except ValueError as error:
        raise BadInput(f"{path}:{number} not a scenario row ({error})") from None
    return row


def safe_part(name: str) -> str:
    """A row's id or category as one path part (no separator, no dot-name)."""
    if not name or "/" in name or "\\" in name or name.startswith(".") or len(name) > 120:
        raise BadInput(f"{name!r} cannot name a scenario file")
    return name
