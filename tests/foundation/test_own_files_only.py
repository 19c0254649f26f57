"""The tree holds only what this project wrote (issue 48): facts from elsewhere (a sha256, a version,
an address) may stand in it, other projects' files may not, not even inside a published bundle.

Three rules, each checked over every git-tracked file and every member of a tracked archive (tar,
tar.gz/tgz/bz2/xz, zip, whl; archives inside archives too, to MAX_DEPTH levels), all read in memory
within the bounds below, links never followed:

1. no file or member has the sha256 of a file under ../shared/peers/ (other projects' files that
   tests read at run time);
2. no wheel or source archive of a registry package: nothing named *.whl, no archive (whatever its
   name) holding a PKG-INFO or a *.dist-info/METADATA member;
3. no published bundle (paper/published/*-bundle.tar.gz) carries an external suite's files: nothing
   under a run folder's suites/<id>/ or a cell's scenarios/ folder whose suite, per that run's
   matrix.yaml, has a source: or an external: key (or is not declared there), nothing under a run
   folder's inputs/, nothing under any suites/<id>/wheel/ (an external suite's requirements.txt is
   the lock we wrote, images/*/requirements.txt, and may stay).

A place is written `repo/path!member!nested-member`, one `!` per archive level. The scan functions
take the root to scan, so the last test runs them on a fake tree in tmp_path and shows they fail.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import subprocess
import tarfile
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT.parent / "shared" / "peers"

MAX_DEPTH = 4  # archive levels opened: a bundle, an archive in it, one in that, one more
MAX_FILE_BYTES = 256 * 1024 * 1024  # a tracked file or a peers file
MAX_MEMBERS = 20_000  # members of one archive
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # one member, uncompressed
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # all members of one archive, uncompressed
MAX_PEER_FILES = 100_000
MAX_MATRIX_BYTES = 1024 * 1024
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()  # an empty file is nobody's content

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ZIP_SUFFIXES = (".zip", ".whl")
RUN_MARKERS = ("matrix.yaml", "run.json", "MANIFEST.sha256")  # files a run folder holds at its top
PART_SUFFIX = re.compile(r"-p\d+of\d+$")  # a suite split in parts names its cells `<id>-p3of4`
SHOWN = 25  # lines of a failure message before the rest is counted per tracked file


@dataclass(frozen=True)
class Finding:
    where: str
    rule: str
    why: str

    def line(self) -> str:
        return f"{self.where}: {self.rule}: {self.why}"


@dataclass(frozen=True)
class Member:
    name: str
    kind: str  # "file", "dir", "link" or "other"
    data: bytes | None  # a file's bytes; None for anything else


@dataclass(frozen=True)
class Item:
    where: str
    sha256: str
    inner: tuple[str, ...] | None  # the file names inside, when the item is an archive that was opened


@dataclass(frozen=True)
class Scan:
    peers_present: bool
    findings: list[Finding]

    def of(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule.startswith(rule)]


# Reading: tracked files, peers files, archive members, all bounded, no link followed.


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True).stdout
    return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file within MAX_FILE_BYTES; None for a link, a folder, a missing file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        return None
    return path.read_bytes()


def peer_index(peers_dir: Path) -> dict[str, list[str]] | None:
    """sha256 -> the peers files with those bytes; None when the folder is absent."""
    if not peers_dir.is_dir():
        return None
    index: dict[str, list[str]] = {}
    seen = 0
    for dirpath, _dirs, files in os.walk(peers_dir):  # os.walk does not follow links to folders
        for name in sorted(files):
            seen += 1
            if seen > MAX_PEER_FILES:
                return index
            path = Path(dirpath) / name
            data = read_regular(path)
            if data is None:
                continue
            digest = hashlib.sha256(data).hexdigest()
            if digest != EMPTY_SHA256:
                index.setdefault(digest, []).append(path.relative_to(peers_dir).as_posix())
    return index


def archive_kind(name: str, head: bytes) -> tuple[str | None, bool]:
    """("tar" | "zip" | None, whether the name says so): by suffix first, else by magic bytes."""
    lower = name.lower()
    if lower.endswith(TAR_SUFFIXES):
        return "tar", True
    if lower.endswith(ZIP_SUFFIXES):
        return "zip", True
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip", False
    if head[257:262] == b"ustar" or head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00":
        return "tar", False  # a compressed stream may hold no tar: read_archive then fails, and it is no archive
    return None, False


def _clean(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/")


def read_tar(data: bytes) -> tuple[list[Member], str | None]:
    members: list[Member] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
            for info in tf:
                if len(members) >= MAX_MEMBERS:
                    return members, f"over {MAX_MEMBERS} members; the rest not scanned"
                name = _clean(info.name)
                if info.isdir():
                    members.append(Member(name, "dir", None))
                elif info.issym() or info.islnk():
                    members.append(Member(name, "link", None))  # never followed, never read
                elif not info.isfile():
                    members.append(Member(name, "other", None))
                elif info.size > MAX_MEMBER_BYTES:
                    return members, f"member {name} is {info.size} bytes, over {MAX_MEMBER_BYTES}; not scanned"
                else:
                    total += info.size
                    if total > MAX_ARCHIVE_BYTES:
                        return members, f"over {MAX_ARCHIVE_BYTES} bytes unpacked; the rest not scanned"
                    handle = tf.extractfile(info)
                    members.append(Member(name, "file", handle.read(MAX_MEMBER_BYTES) if handle else b""))
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        return members, f"unreadable tar ({type(exc).__name__}: {exc})"
    return members, None


def read_zip(data: bytes) -> tuple[list[Member], str | None]:
    members: list[Member] = []
    total = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                return members, f"{len(infos)} members, over {MAX_MEMBERS}; not scanned"
            for info in infos:
                name = _clean(info.filename)
                if info.is_dir():
                    members.append(Member(name, "dir", None))
                elif stat.S_ISLNK(info.external_attr >> 16):
                    members.append(Member(name, "link", None))
                elif info.file_size > MAX_MEMBER_BYTES:
                    return members, f"member {name} is {info.file_size} bytes, over {MAX_MEMBER_BYTES}; not scanned"
                else:
                    total += info.file_size
                    if total > MAX_ARCHIVE_BYTES:
                        return members, f"over {MAX_ARCHIVE_BYTES} bytes unpacked; the rest not scanned"
                    with zf.open(info) as handle:  # read bounded: the header's size may lie
                        members.append(Member(name, "file", handle.read(MAX_MEMBER_BYTES)))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
        return members, f"unreadable zip ({type(exc).__name__}: {exc})"
    return members, None


def read_archive(kind: str, data: bytes) -> tuple[list[Member], str | None]:
    return read_tar(data) if kind == "tar" else read_zip(data)


def collect_items(root: Path, tracked: list[str]) -> tuple[list[Item], list[Finding]]:
    """Every tracked file and every archive member in it (recursively), with its sha256; and the
    archives that could not be scanned whole (too deep, too big, unreadable)."""
    items: list[Item] = []
    problems: list[Finding] = []
    for rel in tracked:
        data = read_regular(root / rel)
        if data is not None:
            _collect(rel, PurePosixPath(rel).name, data, 0, items, problems)
    return items, problems


def _collect(where: str, name: str, data: bytes, depth: int, items: list[Item], problems: list[Finding]) -> None:
    kind, by_name = archive_kind(name, data[:512])
    inner: tuple[str, ...] | None = None
    if kind is not None and depth >= MAX_DEPTH:
        problems.append(Finding(where, "unscanned", f"archive nested deeper than {MAX_DEPTH} levels; not opened"))
    elif kind is not None:
        members, error = read_archive(kind, data)
        if error is not None and (by_name or members):
            problems.append(Finding(where, "unscanned", error))
        if by_name or members or error is None:
            inner = tuple(m.name for m in members if m.kind == "file")
            for m in members:
                if m.kind == "file" and m.data is not None:
                    _collect(f"{where}!{m.name}", PurePosixPath(m.name).name, m.data, depth + 1, items, problems)
    items.append(Item(where, hashlib.sha256(data).hexdigest(), inner))


# The rules.


def peer_copies(items: list[Item], peers: dict[str, list[str]]) -> list[Finding]:
    """Rule 1: the same bytes as a file under ../shared/peers/."""
    return [
        Finding(item.where, "rule 1 (peers copy)", f"same sha256 as peers/{', peers/'.join(peers[item.sha256])}")
        for item in items
        if item.sha256 in peers
    ]


def registry_packages(items: list[Item]) -> list[Finding]:
    """Rule 2: a wheel or an sdist, by its name or by what it holds."""
    found: list[Finding] = []
    for item in items:
        signs = []
        if item.where.rsplit("!", 1)[-1].lower().endswith(".whl"):
            signs.append("named *.whl")
        for name in item.inner or ():
            path = PurePosixPath(name)
            if path.name == "PKG-INFO" or (path.name == "METADATA" and path.parent.name.endswith(".dist-info")):
                signs.append(f"holds {name}")
                break
        if signs:
            found.append(Finding(item.where, "rule 2 (wheel or sdist)", "; ".join(signs)))
    return found


def is_bundle(rel: str) -> bool:
    path = PurePosixPath(rel)
    return str(path.parent) == "paper/published" and path.name.endswith("-bundle.tar.gz")


def matrix_suites(text: bytes | None) -> dict[str, str | None] | None:
    """suite id -> the keys that make it another project's ("source:", "external:"), None for the
    project's own; the whole is None without a readable matrix."""
    if text is None:
        return None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    suites = doc.get("suites") if isinstance(doc, dict) else None
    if not isinstance(suites, list):
        return None
    return {
        str(s["id"]): " and ".join(f"{key}:" for key in ("source", "external") if key in s) or None
        for s in suites
        if isinstance(s, dict) and "id" in s
    }


def cell_suite(cell: str, suites: dict[str, str | None]) -> str:
    """The suite of a cell folder named model__engine__protocol__suite__rN-hash (a part `-pIofN` dropped)."""
    parts = cell.split("__")
    suite = parts[-2] if len(parts) >= 5 else cell
    if suite not in suites and PART_SUFFIX.search(suite):
        suite = PART_SUFFIX.sub("", suite)
    return suite


def split_run(parts: tuple[str, ...], run_roots: set[tuple[str, ...]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(run folder, path inside it): the longest run folder above the member; else up to the first
    suites/, inputs/ or cells/ folder (a run folder without a matrix, so no suite of it is known)."""
    for cut in range(len(parts) - 1, -1, -1):
        if parts[:cut] in run_roots:
            return parts[:cut], parts[cut:]
    for cut, part in enumerate(parts[:-1]):
        if part in ("suites", "inputs", "cells"):
            return parts[:cut], parts[cut:]
    return (), parts


def suite_verdict(suite: str, suites: dict[str, str | None] | None) -> str | None:
    if suites is None:
        return f"suite '{suite}', but its run folder has no readable matrix.yaml: not known to be the project's own"
    if suite not in suites:
        return f"suite '{suite}' is not declared in its run's matrix.yaml"
    keys = suites[suite]
    return None if keys is None else f"suite '{suite}' is another project's ({keys} in its run's matrix.yaml)"


def external_member(rel: tuple[str, ...], suites: dict[str, str | None] | None) -> str | None:
    """Rule 3 for one member, by its path inside its run folder: why it must not be there, or None."""
    if len(rel) >= 2 and rel[0] == "inputs":
        return "a carried external input (a run folder's inputs/)"
    if len(rel) >= 3 and rel[0] == "suites":
        if rel[2:] == ("requirements.txt",):  # the lock we wrote (images/*/requirements.txt, pinned by the matrix)
            return None
        if rel[2] == "wheel":
            return f"a suite's wheel (suites/{rel[1]}/wheel/)"
        return suite_verdict(rel[1], suites)
    if len(rel) >= 4 and rel[0] == "cells" and rel[2] == "scenarios":
        return suite_verdict(cell_suite(rel[1], suites or {}), suites)
    return None


def bundle_findings(bundle: str, members: list[Member]) -> list[Finding]:
    """Rule 3 over one published bundle (one run folder, or a merged bundle of several)."""
    files = [m for m in members if m.kind != "dir"]
    run_roots = {PurePosixPath(m.name).parts[:-1] for m in files if PurePosixPath(m.name).name in RUN_MARKERS}
    matrices = {
        PurePosixPath(m.name).parts[:-1]: matrix_suites(m.data)
        for m in files
        if PurePosixPath(m.name).name == "matrix.yaml" and m.data is not None and len(m.data) <= MAX_MATRIX_BYTES
    }
    found: list[Finding] = []
    for m in files:
        run, rel = split_run(PurePosixPath(m.name).parts, run_roots)
        why = external_member(rel, matrices.get(run))
        if why is not None:
            found.append(Finding(f"{bundle}!{m.name}", "rule 3 (external in bundle)", why))
    return found


def scan_bundles(root: Path, tracked: list[str]) -> list[Finding]:
    found: list[Finding] = []
    for rel in filter(is_bundle, tracked):
        data = read_regular(root / rel)
        if data is not None:
            members, _error = read_tar(data)  # an unreadable bundle is reported by collect_items
            found += bundle_findings(rel, members)
    return found


def scan_tree(root: Path, peers_dir: Path) -> Scan:
    tracked = tracked_files(root)
    peers = peer_index(peers_dir)
    items, problems = collect_items(root, tracked)
    findings = problems + registry_packages(items) + scan_bundles(root, tracked)
    if peers is not None:
        findings += peer_copies(items, peers)
    return Scan(peers is not None, findings)


def report(findings: list[Finding]) -> str:
    """One line a finding, the first SHOWN of them; the rest counted per tracked file."""
    ordered = sorted(findings, key=lambda f: (f.where, f.rule))
    lines = [f.line() for f in ordered[:SHOWN]]
    rest = Counter(f.where.split("!", 1)[0] for f in ordered[SHOWN:])
    lines += [f"... and {n} more in {where}" for where, n in sorted(rest.items())]
    return f"{len(findings)} found:\n" + "\n".join(lines)


# The checks on this tree.


def fail_on(findings: list[Finding], hint: str = "") -> None:
    """Fail with the short report only (no traceback, no repr of the whole scan)."""
    if findings:
        pytest.fail(report(findings) + (f"\n({hint})" if hint else ""), pytrace=False)


@pytest.fixture(scope="module")
def scan() -> Scan:
    return scan_tree(ROOT, PEERS)


def test_no_copy_of_a_peers_file(scan: Scan) -> None:
    if not scan.peers_present:
        pytest.skip(f"{PEERS} is absent: no peers file to compare with (the other checks still ran)")
    fail_on(scan.of("rule 1"))


def test_no_wheel_or_sdist(scan: Scan) -> None:
    fail_on(scan.of("rule 2"))


def test_no_external_suite_files_in_published_bundles(scan: Scan) -> None:
    fail_on(scan.of("rule 3"))


def test_every_archive_was_scanned_whole(scan: Scan) -> None:
    fail_on(scan.of("unscanned"), "raise the bound in this test, or keep such an archive out of the tree")


# The checks can fail: a fake tree with one of each offence, and the same tree clean.


def _tar(entries: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tf.addfile(info)
    return buf.getvalue()


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


FAKE_MATRIX = b"""name: fake
suites:
  - id: ours
    path: scenarios
  - id: theirs
    source: {archive: theirs.tar, sha256: 0000}
    path: theirs/scenarios
  - id: runner
    path: theirs/scenarios
    external: {harness: theirs}
"""
OURS = b'{"id": "ours-001"}\n'
THEIRS = b'{"id": "theirs-001", "by": "another project"}\n'
CELL_OURS = "m__e__json_schema__ours__r1-aaaa"
CELL_THEIRS = "m__e__json_schema__runner-p1of2__r1-bbbb"


def _fake_tree(root: Path, peers: Path, offending: bool) -> None:
    (peers / "other-bench").mkdir(parents=True)
    (peers / "other-bench" / "s-001.json").write_bytes(THEIRS)
    (root / "scenarios").mkdir(parents=True)
    (root / "scenarios" / "ours-001.json").write_bytes(OURS)
    run = "20260101T000000Z-fake-cpu"
    bundle = {
        f"{run}/matrix.yaml": FAKE_MATRIX,
        f"{run}/run.json": b"{}",
        f"{run}/suites/ours/scenarios/ours-001.json": OURS,
        f"{run}/cells/{CELL_OURS}/scenarios/ours-001.json": OURS,
        f"{run}/cells/{CELL_OURS}/transcripts.jsonl": b"{}\n",
    }
    if offending:
        (root / "vendor").mkdir()
        (root / "vendor" / "copied.json").write_bytes(THEIRS)  # rule 1, a tracked file
        (root / "vendor" / "thing-1.0-py3-none-any.whl").write_bytes(_zip({"thing/__init__.py": b"x = 1\n"}))
        (root / "vendor" / "blob.bin").write_bytes(_tar({"thing-1.0/PKG-INFO": b"Name: thing\n"}))  # an sdist, renamed
        wheel = _zip({"thing/__init__.py": b"x = 1\n", "thing-1.0.dist-info/METADATA": b"Name: thing\n"})
        bundle |= {
            f"{run}/suites/theirs/scenarios/s-001.json": THEIRS,  # rules 1 and 3
            f"{run}/suites/undeclared/s.json": b"{}",
            f"{run}/cells/{CELL_THEIRS}/scenarios/s-002.json": b"{}",
            f"{run}/inputs/abc.tar.gz": _tar({"runner/main.py": b"print(1)\n"}),
            f"{run}/suites/ours/wheel/pkg.zip": wheel,  # rule 3 (wheel/), rule 2 (what it holds)
        }
    published = root / "paper" / "published"
    published.mkdir(parents=True)
    (published / "fake-cpu-bundle.tar.gz").write_bytes(_tar(bundle, links=(f"{run}/suites/ours/link",)))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-f", "-A"], check=True)


def test_the_scan_catches_each_offence_and_passes_a_clean_tree(tmp_path: Path) -> None:
    bad, bad_peers = tmp_path / "bad", tmp_path / "bad-peers"
    _fake_tree(bad, bad_peers, offending=True)
    scan = scan_tree(bad, bad_peers)
    bundle = "paper/published/fake-cpu-bundle.tar.gz!20260101T000000Z-fake-cpu"
    assert {f.where for f in scan.of("rule 1")} == {
        "vendor/copied.json",
        f"{bundle}/suites/theirs/scenarios/s-001.json",
    }
    assert {f.where for f in scan.of("rule 2")} == {
        "vendor/thing-1.0-py3-none-any.whl",
        "vendor/blob.bin",
        f"{bundle}/suites/ours/wheel/pkg.zip",
    }
    assert {f.where.removeprefix(bundle) for f in scan.of("rule 3")} == {
        "/suites/theirs/scenarios/s-001.json",
        "/suites/undeclared/s.json",
        f"/cells/{CELL_THEIRS}/scenarios/s-002.json",
        "/inputs/abc.tar.gz",
        "/suites/ours/wheel/pkg.zip",
    }
    assert not scan.of("unscanned")
    without_peers = scan_tree(bad, tmp_path / "absent")
    assert not without_peers.peers_present and not without_peers.of("rule 1")
    assert without_peers.of("rule 2") and without_peers.of("rule 3")

    clean, clean_peers = tmp_path / "clean", tmp_path / "clean-peers"
    _fake_tree(clean, clean_peers, offending=False)
    assert scan_tree(clean, clean_peers).findings == []
